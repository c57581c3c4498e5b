"""Where steadyloop's per-turn time goes: cProfile over S1's async configuration.

Runs in steadyloop's benchmark environment (stdlib cProfile, nothing to install):

    bench/.venvs/steadyloop/bin/python bench/profile_steadyloop.py [--runs 300] [--calls 3]

Prints the functions by own time and by cumulative time, and the µs per turn with and
without the profiler, so the profile's overhead can be judged. The options turn on what another
scenario measures (S3, S6, S7, S10); `--eval` profiles S14's eval of `--runs` cases instead, and
`--mcp` S9's first model call with an MCP server, in a fresh interpreter (imports and the
server's start count there).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "drivers"))

import common
from steadyloop_driver import SteadyloopRunner

from steadyloop import Approve, PendingCall, RunContext


async def runs(runner: SteadyloopRunner, plan: common.Plan, count: int, together: bool) -> None:
    if together:
        await asyncio.gather(*(one(runner, plan) for _ in range(count)))
        return
    for _ in range(count):
        await one(runner, plan)


async def one(runner: SteadyloopRunner, plan: common.Plan) -> None:
    common.CURRENT.set(common.RunState(plan))
    await runner.run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--sync", action="store_true", help="a sync tool instead of an async one")
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="S3 instead: the runs at once, 5 turns, 10 ms model",
    )
    parser.add_argument("--store", action="store_true", help="with the SQLite run log on (S6)")
    parser.add_argument(
        "--durability",
        choices=("turn", "batch"),
        default="turn",
        help="the run log's durability (with --store)",
    )
    parser.add_argument(
        "--traced",
        action="store_true",
        help="traced with the OpenTelemetry SDK to an in-memory exporter (S7)",
    )
    parser.add_argument(
        "--approver",
        choices=("sync", "async"),
        help="every call gated, this kind of approver approving (S10)",
    )
    parser.add_argument(
        "--eval", action="store_true", help="S14's eval of --runs cases instead (scored, logged)"
    )
    parser.add_argument(
        "--mcp", action="store_true", help="S9's first call with an MCP server instead"
    )
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    if args.eval:
        profile_eval(args.runs, args.top)
        return
    if args.mcp:
        profile_mcp(args.top)
        return
    plan = common.Plan(turns=20, calls=args.calls, is_async=not args.sync)
    if args.concurrent:
        plan = common.Plan(turns=5, calls=args.calls, is_async=not args.sync, latency=0.010)
    options: dict[str, Any] = {}
    if args.store:
        options["store"] = Path(tempfile.mkdtemp()) / "runs.sqlite3"
        options["durability"] = args.durability
    if args.traced:
        options["tracer_provider"] = traced_provider()
    if args.approver is not None:
        options["approver"] = approve_async if args.approver == "async" else approve_sync
    runner = SteadyloopRunner(plan, gated=args.approver is not None, **options)
    asyncio.run(runs(runner, plan, 20, False))  # warm-up
    began = time.perf_counter()
    asyncio.run(runs(runner, plan, args.runs, args.concurrent))
    plain = (time.perf_counter() - began) / args.runs / plan.turns * 1e6
    profiler = cProfile.Profile()
    began = time.perf_counter()
    profiler.runcall(asyncio.run, runs(runner, plan, args.runs, args.concurrent))
    profiled = (time.perf_counter() - began) / args.runs / plan.turns * 1e6
    print(f"{plain:.0f} µs per turn ({profiled:.0f} µs under the profiler), {plan}")
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)


def profile_eval(cases: int, top: int) -> None:
    """S14's eval (`eval_batch.eval_or_batch`) of `cases` cases under the profiler, after one of
    ten cases as a warm-up."""
    from eval_batch import eval_or_batch

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "warm").mkdir()
        eval_or_batch("eval", 10, Path(folder) / "warm")
        (Path(folder) / "timed").mkdir()
        profiler = cProfile.Profile()
        cpu = profiler.runcall(eval_or_batch, "eval", cases, Path(folder) / "timed")
    print(f"{cpu:.2f} ms CPU per case under the profiler, {cases} cases")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def profile_mcp(top: int) -> None:
    """S9's probe of a steadyloop agent with server-everything, in a fresh interpreter under
    the profiler (imports count, as in S9); prints the probe's profile."""
    from steadyloop_driver import PROBE, everything_command

    server = everything_command()
    if isinstance(server, str):
        print(server)
        return
    command = [sys.executable, "-m", "cProfile", "-s", "tottime", str(PROBE), "steadyloop"]
    output = subprocess.run(
        [*command, *server], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    rows = output.splitlines()
    print("\n".join(rows[: next((i for i, r in enumerate(rows) if "ncalls" in r), 0) + top + 1]))


def traced_provider() -> Any:
    """The SDK's provider exporting every span to memory, as S7 traces (emptied as it fills)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    class Forgetting(InMemorySpanExporter):
        def export(self, spans: Any) -> Any:
            self.clear()
            return super().export(spans)

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Forgetting()))
    return provider


def approve_sync(call: PendingCall, ctx: RunContext[Any]) -> Approve:
    return Approve()


async def approve_async(call: PendingCall, ctx: RunContext[Any]) -> Approve:
    return Approve()


if __name__ == "__main__":
    main()
