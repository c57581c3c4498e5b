"""Evals against batches: CPU per case of `evaluate` and of `run_batch` over the same cases
(bench S14's `eval_ratio`, and bench/evals.py)."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

import common

from steadyloop import Agent, AssistantMessage, ToolCall, tool
from steadyloop.models.base import Model, ModelRequest

EVAL_CALLS = (2, 1)  # tool calls asked for by the first and second model reply; the third answers


class EvalModel(Model):
    """Asks for 2 adds, then 1, then answers with the prompt, waiting 10-50 ms a reply."""

    name = "bench"

    async def request(self, request: ModelRequest) -> AssistantMessage:
        await asyncio.sleep(random.uniform(0.010, 0.050))
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turn >= len(EVAL_CALLS):
            return AssistantMessage(f"done: {request.messages[0].text}")  # type: ignore[union-attr]
        return AssistantMessage(
            tool_calls=tuple(
                ToolCall(f"c{turn}-{n}", "add", '{"a": 1, "b": 2}') for n in range(EVAL_CALLS[turn])
            )
        )


def eval_agent() -> Agent[Any]:
    """The agent of every case, batch or eval."""
    return Agent(EvalModel(), tools=[tool(common.add_async)])


def eval_or_batch(config: str, cases: int, folder: Path) -> float:
    """CPU ms per case of `cases` runs as a batch (`config` "batch") or as a scored eval
    ("eval"), in a fresh log in `folder`; the process's CPU, every thread's (the log's writer)."""
    from steadyloop.batch import run_batch
    from steadyloop.evals import Contains, MaxTurns, NoToolErrors, ToolCalled, evaluate

    rows = [{"id": f"c{i}", "prompt": f"case {i}"} for i in range(cases)]
    store = folder / "runs.db"
    before = time.process_time()
    if config == "batch":
        run_batch(eval_agent, rows, out=folder / "out.jsonl", store=store, batch="b")
    else:
        dataset = [{"id": r["id"], "input": r["prompt"], "expected": r["prompt"]} for r in rows]
        scorers = [Contains(), ToolCalled("add"), NoToolErrors(), MaxTurns(5)]
        report = evaluate(eval_agent, dataset, scorers, name="e", store=store)
        if report.pass_rate != 1.0:
            raise AssertionError(f"S14: the eval did not pass every case:\n{report.render()}")
    return (time.process_time() - before) * 1000 / cases


def evals_against_batch(settings: common.Settings, folder: Path) -> dict[str, list[float]]:
    """CPU ms per case of a batch and of an eval of the same cases, in turn, each in a fresh
    log; a small first round warms up."""
    cases = 20 if settings.quick else 1000
    samples: dict[str, list[float]] = {"batch": [], "eval": []}
    for number in range(2 if settings.quick else 5):
        for config, values in samples.items():
            where = folder / f"{config}-{number}"
            where.mkdir()
            cpu = eval_or_batch(config, cases if number else 10, where)
            if number > 0:
                values.append(cpu)
    return samples
