"""Sessions as they grow: what each run of a long session costs, run after run (bench S14's
`session_growth_*` rows, and bench/sessions.py)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from typing import Any

from steadyloop import Agent, AssistantMessage, Compaction, Limits, Message, Usage
from steadyloop.limits import estimate_tokens
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec

SESSION_TARGET = 1.2
INSTRUCTIONS = ("You are a support agent for an online shop. Answer briefly and precisely. " * 64)[
    :4800
]
ANSWER = ("Your order ships from the Leeds warehouse within two working days. " * 6)[:400]
SUMMARY = ("The customer asked about several orders; each was answered. " * 10)[:600]


class SessionModel:
    """Answers at once, reporting the tokens of what it read and their price; keeps the time
    spent answering, the model's part of a run's wall time."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def reply(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        started = time.perf_counter()
        read = len(INSTRUCTIONS) // 4 + sum(estimate_tokens(m) for m in messages)
        usage = Usage(read, 100, 1, cost_usd=read * 1e-6 + 100 * 4e-6)
        answer = AssistantMessage(ANSWER, usage=usage, stop_reason="end_turn")
        self.seconds += time.perf_counter() - started
        return answer


async def one_session(
    agent: Agent[Any], model: SessionModel, name: str, runs: int
) -> list[dict[str, float]]:
    """One session of `runs` runs; per run its wall time, steadyloop's own part of it, its
    history length and input tokens."""
    out: list[dict[str, float]] = []
    for number in range(runs):
        in_model = model.seconds
        started = time.perf_counter()
        result = await agent.run(f"Question {number}: where is order {number}?", session=name)
        seconds = time.perf_counter() - started
        assert agent.store is not None
        assert result.run_id is not None
        info = await asyncio.to_thread(agent.store.run, result.run_id)
        own = seconds - (model.seconds - in_model)
        out.append(
            {
                "seconds": seconds,
                "own_seconds": own,
                "history": info.history,
                "tokens": result.usage.input_tokens,
            }
        )
    return out


async def session_growth(runs: int, sessions: int, compaction: bool, store: str) -> dict[str, Any]:
    """`sessions` sessions of `runs` runs each on `store` (bench/sessions.py tells the setup):
    per run position the median over sessions, and the ratios of the last run to the first
    and of the last ten to runs 11-20."""
    model = SessionModel()
    agent = Agent(
        FunctionModel(model.reply, name="fake"),
        instructions=INSTRUCTIONS,
        limits=Limits(max_context_tokens=2500 if compaction else 10_000_000),
        compaction=Compaction(keep_recent=4, summarise=lambda _: SUMMARY) if compaction else None,
        store=store,
    )
    await agent.run("warm up")  # the log's file and the imports, before anything is timed
    samples = [await one_session(agent, model, f"bench-{n}", runs) for n in range(sessions)]
    await agent.aclose()
    per_run = [
        {key: statistics.median(s[index][key] for s in samples) for key in samples[0][index]}
        for index in range(runs)
    ]
    filled, late = per_run[10:20], per_run[-10:]

    def ratio(
        key: str, first: Sequence[dict[str, float]], last: Sequence[dict[str, float]]
    ) -> float:
        return round(
            statistics.fmean(r[key] for r in last) / statistics.fmean(r[key] for r in first), 2
        )

    own = ratio("own_seconds", per_run[:1], per_run[-1:])
    tokens = ratio("tokens", per_run[:1], per_run[-1:])
    flat = ratio("own_seconds", filled, late)
    flat_tokens = ratio("tokens", filled, late)
    return {
        "runs": runs,
        "sessions": sessions,
        "compaction": compaction,
        "run_1": per_run[0],
        f"run_{runs}": per_run[-1],
        "time_ratio_last_over_first": ratio("seconds", per_run[:1], per_run[-1:]),
        "own_time_ratio_last_over_first": own,
        "tokens_ratio_last_over_first": tokens,
        "time_ratio_last10_over_runs_11_20": ratio("seconds", filled, late),
        "own_time_ratio_last10_over_runs_11_20": flat,
        "tokens_ratio_last10_over_runs_11_20": flat_tokens,
        "target": {
            "figure": f"runs {runs - 9}-{runs} / runs 11-20 <= {SESSION_TARGET}x (compaction on)",
            "own_time": {"ratio": flat, "met": compaction and flat <= SESSION_TARGET},
            "tokens": {"ratio": flat_tokens, "met": compaction and flat_tokens <= SESSION_TARGET},
        },
        "history_max": max(r["history"] for r in per_run),
        "per_run_ms": [round(r["seconds"] * 1000, 2) for r in per_run],
        "per_run_own_ms": [round(r["own_seconds"] * 1000, 2) for r in per_run],
        "per_run_history": [r["history"] for r in per_run],
        "per_run_tokens": [r["tokens"] for r in per_run],
    }
