"""Evals against batches: the same 1,000 runs (a fake model taking 10-50 ms a reply, 3 model
calls and 3 tool calls each, a SQLite run log) as a batch, and as an eval that reads each run
back from the log and scores it (contains, tool_called, no_tool_errors, max_turns).

    uv run python bench/evals.py [--cases 1000] [--rounds 3]

Each configuration runs in a fresh process, `--rounds` times interleaved, and reports its CPU
milliseconds per case (its own process: user + system, imports aside) and its wall time; this
prints a JSON object with every sample, the medians and the ratio of the eval's median CPU per
case to the batch's (the target: at most 1.2).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from steadyloop import Agent, AssistantMessage, ToolCall, tool
from steadyloop.models.base import Model, ModelRequest

CALLS = (2, 1)  # tool calls asked for by the first and second model reply; the third answers


@tool
async def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


class FakeModel(Model):
    """Asks for 2 adds, then 1, then answers with the prompt, waiting 10-50 ms a reply."""

    name = "bench"

    async def request(self, request: ModelRequest) -> AssistantMessage:
        await asyncio.sleep(random.uniform(0.010, 0.050))
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turn >= len(CALLS):
            return AssistantMessage(f"done: {request.messages[0].text}")  # type: ignore[union-attr]
        return AssistantMessage(
            tool_calls=tuple(
                ToolCall(f"c{turn}-{n}", "add", '{"a": 1, "b": 2}') for n in range(CALLS[turn])
            )
        )


def make_agent() -> Agent:
    return Agent(FakeModel(), tools=[add])


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one(config: str, cases: int, folder: Path) -> dict[str, Any]:
    """Runs one configuration in this process and measures it."""
    rows = [{"id": f"c{i}", "prompt": f"case {i}"} for i in range(cases)]
    store = folder / "runs.db"
    from steadyloop.batch import run_batch
    from steadyloop.evals import Contains, MaxTurns, NoToolErrors, ToolCalled, evaluate

    before, started = cpu(), time.monotonic()  # imports aside: both pay them once
    if config == "batch":
        run_batch(make_agent, rows, out=folder / "out.jsonl", store=store, batch="b")
    else:
        dataset = [{"id": r["id"], "input": r["prompt"], "expected": r["prompt"]} for r in rows]
        report = evaluate(make_agent, dataset, [Contains(), ToolCalled("add"), NoToolErrors(),
                          MaxTurns(5)], name="e", store=store)  # fmt: skip
        assert report.pass_rate == 1.0, report.render()
    return {
        "config": config,
        "cases": cases,
        "cpu_ms_per_case": (cpu() - before) * 1000 / cases,
        "wall_s": time.monotonic() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, interleaved")
    parser.add_argument("--config", choices=["batch", "eval"], default=None)
    args = parser.parse_args()
    if args.config is not None:
        with tempfile.TemporaryDirectory() as folder:
            print(json.dumps(one(args.config, args.cases, Path(folder))))
        return
    samples: dict[str, list[dict[str, Any]]] = {"batch": [], "eval": []}
    for _ in range(args.rounds):
        for config in samples:
            out = subprocess.run(
                [sys.executable, __file__, "--config", config, "--cases", str(args.cases)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            samples[config].append(json.loads(out.stdout.strip().splitlines()[-1]))
    cpu = {c: statistics.median(s["cpu_ms_per_case"] for s in runs) for c, runs in samples.items()}
    print(json.dumps({
        "cases": args.cases,
        "rounds": args.rounds,
        "cpu_ms_per_case": {c: round(v, 3) for c, v in cpu.items()},
        "eval_cpu_over_batch": round(cpu["eval"] / cpu["batch"], 3),
        "samples": samples,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
