"""Durable runs on DBOS (extra `steadyloop[dbos]`): `durable(agent)`.

DBOS checkpoints a workflow's steps in Postgres and, when the process running it dies, runs the
workflow again elsewhere from the top, answering each step that had finished with its recorded
output. `durable(agent)` makes each model call and each tool call a step (through the effects
seam, so every kind of tool counts), and the agent's run, called inside a workflow, the loop of
that workflow: its run id is the workflow id.

    agent = durable(Agent("openai:gpt-4.1-mini", tools=[...], store="postgresql://..."))

    @DBOS.workflow()
    async def answer(ticket: str) -> str:
        return (await agent.run(ticket)).output   # run id: DBOS.workflow_id

A recovered workflow replays the loop rather than resuming it from the run log: only the step
that was in flight runs again. Replaying logs every event of the run a second time at the
sequence number it had, which the log ignores (its appends are idempotent), so the recovered
run's log is the one a clean run would have left.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from dbos import DBOS

from steadyloop.effects import Effects, ModelCall, ToolInvocation
from steadyloop.errors import ConfigError
from steadyloop.events import Event, ModelRequestStarted, ModelRetry
from steadyloop.messages import AssistantMessage, Message, Usage
from steadyloop.store import LoggedEvent, RunInfo, RunLog, ToolRecord

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.events import ToolCallFinished

__all__ = ["DurableSteps", "WorkflowLog", "durable"]

T = TypeVar("T")


def durable(agent: Agent) -> Agent:
    """Makes `agent`'s model and tool calls DBOS steps and its runs replayable; returns it.

    The agent needs a run log every worker shares (Postgres, like DBOS itself). Run it inside a
    `@DBOS.workflow()`; outside one it runs as usual.
    """
    store = agent.store
    if store is None:
        raise ConfigError(
            "durable() needs an agent with a run log that every worker shares: "
            "Agent(..., store='postgresql://...')"
        )
    if isinstance(store, WorkflowLog):
        return agent  # durable already
    log = WorkflowLog(store)
    agent.store = log
    agent.effects = [DurableSteps(log), *filter(None, [agent.effects])]
    return agent


class DurableSteps(Effects):
    """Runs each model call as the step "model" and each tool call as "tool:NAME" when inside
    a DBOS workflow (outermost, so that other effects run only when the call really does).

    A tool call logs how it finished from inside the call; one that DBOS answers from its
    record does not run, so `log` is told of it instead.
    """

    def __init__(self, log: WorkflowLog) -> None:
        self._log = log

    async def model_call(
        self, call: ModelCall, proceed: Callable[[], Awaitable[AssistantMessage]]
    ) -> AssistantMessage:
        reply, _ = await _step("model", proceed)
        return reply

    async def tool_call(
        self, call: ToolInvocation, proceed: Callable[[], Awaitable[ToolCallFinished]]
    ) -> ToolCallFinished:
        finished, ran = await _step(f"tool:{call.call.name}", proceed)
        if not ran and call.run_id is not None:
            self._log.replayed(call.run_id, finished)
        return finished


async def _step(name: str, proceed: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
    """`proceed()` as the DBOS step `name` inside a workflow; True when it ran (False when its
    recorded output was returned)."""
    if DBOS.workflow_id is None:
        return await proceed(), True
    ran = False

    async def body() -> T:
        nonlocal ran
        ran = True
        return await proceed()

    return await DBOS.run_step_async({"name": name}, body), ran


class WorkflowLog:
    """A run log seen from DBOS workflows: a run started in a workflow is named after it, and
    starting a run that is already logged under the running workflow's id replays it.

    Replaying a run claims it and logs its events again from the top (each a no-op where it is
    already logged). Calls answered from DBOS's record do not log what they logged from inside
    when they ran: a model call's retries are logged again from the log itself, and a tool
    call's end from its recorded outcome (`replayed`), each at its place, so every later event
    keeps its own. Everything else is the wrapped log's.
    """

    def __init__(self, log: RunLog) -> None:
        self.log = log
        self.location = log.location
        self.read_only = log.read_only
        self.blocking_io = log.blocking_io
        self._retries: dict[str, dict[int, list[ModelRetry]]] = {}
        self._recorders: dict[str, Callable[[Event], None]] = {}

    def start_run(
        self,
        *,
        model: str,
        prompt: str,
        history: Sequence[Message],
        config: Mapping[str, Any],
        run_id: str | None = None,
    ) -> str:
        workflow = DBOS.workflow_id
        run_id = run_id if run_id is not None else workflow
        if run_id is not None and run_id == workflow and self.log.find(run_id) is not None:
            self.log.claim(run_id)
            self._retries[run_id] = _retries(self.log.events(run_id))
            self.log.mark(run_id, "running")
            return run_id
        return self.log.start_run(
            model=model, prompt=prompt, history=history, config=config, run_id=run_id
        )

    def recorder(self, run_id: str, next_seq: int | None = None) -> Callable[[Event], None]:
        record = self.log.recorder(run_id, next_seq)
        retries = self._retries.pop(run_id, {})

        def recorded(event: Event) -> None:
            record(event)
            if isinstance(event, ModelRequestStarted):
                for retry in retries.pop(event.turn, ()):
                    record(retry)

        if DBOS.workflow_id is not None:
            self._recorders[run_id] = recorded
        return recorded

    def replayed(self, run_id: str, finished: ToolCallFinished) -> None:
        """Logs the end of a tool call of run `run_id` that DBOS answered from its record."""
        record = self._recorders.get(run_id)
        if record is not None:
            record(finished)

    async def commit(self, run_id: str) -> None:
        await self.log.commit(run_id)

    def flush(self) -> None:
        self.log.flush()

    def mark(
        self, run_id: str, status: str, error: str | None = None, usage: Usage | None = None
    ) -> None:
        self.log.mark(run_id, status, error, usage)

    def claim(self, run_id: str) -> None:
        self.log.claim(run_id)

    def release(self, run_id: str) -> None:
        self._recorders.pop(run_id, None)
        self.log.release(run_id)

    def runs(self, limit: int = 20) -> list[RunInfo]:
        return self.log.runs(limit)

    def run(self, run_id: str) -> RunInfo:
        return self.log.run(run_id)

    def find(self, run_id: str) -> RunInfo | None:
        return self.log.find(run_id)

    def runs_with_prefix(self, prefix: str, limit: int = 2) -> list[RunInfo]:
        return self.log.runs_with_prefix(prefix, limit)

    def events(self, run_id: str) -> list[LoggedEvent]:
        return self.log.events(run_id)

    def messages(self, run_id: str) -> tuple[Message, ...]:
        return self.log.messages(run_id)

    def tool_records(self, run_id: str) -> dict[str, ToolRecord]:
        return self.log.tool_records(run_id)

    def to_jsonl(self, run_id: str) -> Iterator[str]:
        return self.log.to_jsonl(run_id)

    def from_jsonl(self, lines: Iterable[str]) -> str:
        return self.log.from_jsonl(lines)

    def close(self) -> None:
        self.log.close()


def _retries(events: Iterable[LoggedEvent]) -> dict[int, list[ModelRetry]]:
    """The logged retries of each turn's model call."""
    retries: dict[int, list[ModelRetry]] = {}
    for event in events:
        if event.kind == "model_retry":
            retries.setdefault(event.data["turn"], []).append(ModelRetry(**event.data))
    return retries
