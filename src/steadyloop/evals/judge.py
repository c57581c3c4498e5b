"""`Judge(model, rubric)`: a model scores each answer against a rubric, each judgement a logged run.

The judge's prompt holds the rubric, the case's input text, the expected answer (when there is
one) and the agent's answer; its answer is a typed `Verdict` through `final_answer`. In an eval,
each judgement runs in the eval's log under an id made from the eval's name and a hash of the
model and the prompt: a re-run finds the verdict of an unchanged prompt there and asks no model,
while a changed rubric, expected answer or agent answer is a new prompt, a new id and a new
judgement, never a stale verdict. A judge run that failed or stopped at a limit scores an error
with its run id, and is not asked again (give the eval another name to try again).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from steadyloop.errors import LimitExceeded
from steadyloop.evals.scorers import Score, Scorer, answer_text, failed

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.evals.dataset import Case
    from steadyloop.evals.report import Attempt
    from steadyloop.models import Model
    from steadyloop.store import RunLog

__all__ = ["Judge", "Verdict"]

INSTRUCTIONS = (
    "You grade an AI agent's answer against a rubric. Read the rubric, the task the agent was "
    "given, the expected answer if there is one, and the agent's answer. Then call final_answer "
    "with your verdict: a short reason, a score from 0 (fails the rubric) to 1 (meets it fully), "
    "and whether the answer passes."
)


class Verdict(BaseModel):
    """A judge's answer: why, a score from 0 to 1, and whether the answer passes."""

    reason: str
    score: float = Field(ge=0, le=1)
    passed: bool


@dataclass
class Bench:
    """Where an eval's judges work: its log, its name, and one agent per judge (`close()`
    releases the models it made from specs; a `Model` given is the caller's)."""

    store: RunLog
    eval_name: str
    agents: dict[int, Agent[Any]] = field(default_factory=dict)
    made: list[Agent[Any]] = field(default_factory=list)
    judging: dict[str, asyncio.Future[Score]] = field(default_factory=dict)

    async def close(self) -> None:
        for agent in self.made:
            await agent.aclose()


BENCH: contextvars.ContextVar[Bench | None] = contextvars.ContextVar("judge_bench", default=None)


class Judge(Scorer):
    """An LLM judge: `model` (a spec such as "openai:gpt-4.1", or a `Model`) grades each answer
    against `rubric`; its score is the verdict's, with the judge's run id."""

    def __init__(
        self, model: Model | str, rubric: str, *, name: str = "judge", threshold: float = 0.5
    ) -> None:
        self.model = model
        self.rubric = rubric
        self.name = name
        self.threshold = threshold

    def prompt(self, case: Case, attempt: Attempt) -> str:
        """What the judge is asked about `attempt`."""
        parts = [f"Rubric:\n{self.rubric}", f"Task given to the agent:\n{case.text}"]
        if case.expected is not None:
            parts.append(f"Expected answer:\n{answer_text(case.expected)}")
        parts.append(f"The agent's answer:\n{answer_text(attempt.output)}")
        return "\n\n".join(parts)

    def run_id(self, eval_name: str, prompt: str, model_name: str) -> str:
        """The judgement's run id: the same prompt to the same model gives the same id."""
        digest = hashlib.sha256(json.dumps([model_name, INSTRUCTIONS, prompt]).encode())
        return f"{eval_name}:judge:{digest.hexdigest()[:24]}"

    async def score(self, case: Case, attempt: Attempt) -> Score:
        bench = BENCH.get()
        agent = self._agent(bench)
        prompt = self.prompt(case, attempt)
        if bench is None:  # outside an eval: an unlogged judgement
            try:
                return _verdict_score(await agent.run(prompt), None)
            finally:
                if isinstance(self.model, str):
                    await agent.aclose()
        run_id = self.run_id(bench.eval_name, prompt, agent.model.name)
        # Attempts with one answer (repeats, say) share one judgement: one run, one model call.
        judging = bench.judging.get(run_id)
        if judging is None:
            judging = bench.judging[run_id] = asyncio.ensure_future(
                self._judge(agent, prompt, bench.store, run_id)
            )
        return await asyncio.shield(judging)

    async def _judge(self, agent: Agent[Any], prompt: str, store: RunLog, run_id: str) -> Score:
        """The judgement logged as `run_id`: read back when the log has it, else asked now."""
        logged = await asyncio.to_thread(store.find, run_id)
        if logged is not None and logged.status == "error":
            return replace(failed(f"the judge's run failed: {logged.error}"), run_id=run_id)
        try:
            result = await agent.run(prompt, run_id=run_id, if_exists="resume")
        except LimitExceeded as exc:
            return replace(failed(f"the judge's run stopped: {exc}"), run_id=run_id)
        except Exception as exc:
            reason = f"the judge's run failed: {type(exc).__name__}: {exc}"
            return replace(failed(reason), run_id=run_id)
        return _verdict_score(result, run_id)

    def _agent(self, bench: Bench | None) -> Agent[Any]:
        from steadyloop.agent import Agent

        agent = bench.agents.get(id(self)) if bench is not None else None
        if agent is None:
            agent = Agent(
                self.model, instructions=INSTRUCTIONS, output=Verdict,
                store=bench.store if bench is not None else None,
            )  # fmt: skip
            if bench is not None:
                bench.agents[id(self)] = agent
                if isinstance(self.model, str):
                    bench.made.append(agent)
        return agent


def _verdict_score(result: Any, run_id: str | None) -> Score:
    if result.stop_reason != "end_turn" or not isinstance(result.output, Verdict):
        reason = f"the judge's run stopped: {result.stop_reason}"
        return Score(0.0, False, reason, error=reason, run_id=run_id)
    verdict: Verdict = result.output
    return Score(verdict.score, verdict.passed, verdict.reason, run_id=run_id)
