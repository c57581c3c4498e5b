"""What every driver shares: the scenarios, the fake model's script, the tools, the timing.

A driver wraps one library: given a `Plan` it builds that library's agent around a fake model
made of the library's own types and returns a `Runner`. The fake model asks `next_reply()`
what to say; it never looks at the history, so its cost is the same for every library and
does not grow with the conversation. Everything here is stdlib only: it runs inside each
library's own virtual environment.

Run one scenario of one driver: `python bench/drivers/X_driver.py S1 [--quick]`; it prints one
JSON object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import inspect
import itertools
import json
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

PROMPT = "Work through the task with the tools, then answer."
FINAL_TEXT = "done"
PAGE_TEXT = ("lorem ipsum dolor sit amet " * 80)[:2048]  # a 2 KB tool result (S5)


# -- the tools: the same functions for every library ------------------------------------------


def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: the first integer.
        b: the second integer.
    """
    return a + b


async def add_async(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: the first integer.
        b: the second integer.
    """
    return a + b


def wait(seconds: float) -> str:
    """Waits, blocking, then says so.

    Args:
        seconds: how long to wait.
    """
    time.sleep(seconds)
    return "waited"


async def wait_async(seconds: float) -> str:
    """Waits, then says so.

    Args:
        seconds: how long to wait.
    """
    await asyncio.sleep(seconds)
    return "waited"


def page(number: int) -> str:
    """Returns one 2 KB page of a document.

    Args:
        number: the page number.
    """
    return PAGE_TEXT


async def page_async(number: int) -> str:
    """Returns one 2 KB page of a document.

    Args:
        number: the page number.
    """
    return PAGE_TEXT


for _fn, _name in ((add_async, "add"), (wait_async, "wait"), (page_async, "page")):
    _fn.__name__ = _fn.__qualname__ = _name

TOOLS: dict[tuple[str, bool], Callable[..., Any]] = {
    ("add", False): add,
    ("add", True): add_async,
    ("wait", False): wait,
    ("wait", True): wait_async,
    ("page", False): page,
    ("page", True): page_async,
}


# -- the plan of a run and the fake model's side of it -----------------------------------------


@dataclass(frozen=True)
class Plan:
    """One run: `turns` model calls; all but the last ask for `calls` calls to `tool`."""

    turns: int
    calls: int
    tool: str = "add"
    is_async: bool = True
    latency: float = 0.0  # seconds the fake model waits per call

    @property
    def function(self) -> Callable[..., Any]:
        return TOOLS[(self.tool, self.is_async)]

    def arguments(self, turn: int, index: int) -> dict[str, Any]:
        if self.tool == "add":
            return {"a": turn, "b": index}
        if self.tool == "wait":
            return {"seconds": 0.1}
        return {"number": turn}


@dataclass(frozen=True)
class Call:
    """One tool call the fake model asks for; drivers turn it into their library's type."""

    id: str
    name: str
    arguments: dict[str, Any]
    arguments_json: str


@dataclass
class RunState:
    """Per-run state of the fake model, found through a context variable (no history scan)."""

    plan: Plan
    turn: int = 0
    stamps: list[int] | None = None


CURRENT: contextvars.ContextVar[RunState] = contextvars.ContextVar("bench_run")


def next_reply() -> list[Call] | None:
    """The calls the fake model makes this turn, or None for the final text answer."""
    state = CURRENT.get()
    if state.stamps is not None:
        state.stamps.append(time.perf_counter_ns())
    turn = state.turn
    state.turn = turn + 1
    plan = state.plan
    if turn >= plan.turns - 1:
        return None
    return [
        Call(f"call_{turn}_{i}", plan.tool, args := plan.arguments(turn, i), json.dumps(args))
        for i in range(plan.calls)
    ]


def latency() -> float:
    """Seconds the fake model of the current run waits before replying."""
    return CURRENT.get().plan.latency


# -- drivers -----------------------------------------------------------------------------------


class Runner(Protocol):
    """One library's agent for one plan; `run` is a coroutine function, or plain for sync libs."""

    def run(self) -> Any: ...


class Driver(Protocol):
    name: str

    def versions(self) -> dict[str, str]: ...

    def make(self, plan: Plan) -> Runner: ...

    def supports(self, plan: Plan) -> str | None:
        """None when the plan can run; else why not (shown as n/a)."""
        ...


class NotSupported(Exception):
    """The library cannot run this configuration at all (reported as n/a, with the reason)."""


def _check_output(output: Any, where: str) -> None:
    if FINAL_TEXT not in str(output):
        raise AssertionError(f"{where}: the run ended with {output!r}, not the fake model's answer")


async def _one_async(runner: Runner, state: RunState) -> Any:
    CURRENT.set(state)
    return await runner.run()


def _one_sync(runner: Runner, state: RunState) -> Any:
    CURRENT.set(state)
    return runner.run()


def is_async(runner: Runner) -> bool:
    return inspect.iscoroutinefunction(runner.run)


def timed_runs(
    runners: Sequence[tuple[Runner, Plan]], reps: int, budget: float, stamps: bool = False
) -> list[list[tuple[int, RunState]]]:
    """Runs each runner in turn, `reps` rounds at most (or until `budget` seconds), timing each.

    The first round is a warm-up and not recorded. Runs of one round are interleaved, so slow
    drifts of the machine hit every configuration alike.
    """
    samples: list[list[tuple[int, RunState]]] = [[] for _ in runners]

    async def all_async() -> None:
        await _rounds(lambda r, s: _one_async(r, s))

    async def _rounds(one: Callable[[Runner, RunState], Awaitable[Any]]) -> None:
        started = time.perf_counter()
        for round_number in range(reps + 1):
            for index, (runner, plan) in enumerate(runners):
                state = RunState(plan, stamps=[] if stamps else None)
                begin = time.perf_counter_ns()
                output = await one(runner, state)
                elapsed = time.perf_counter_ns() - begin
                if round_number == 0:
                    _check_output(output, f"{plan}")
                    _check_turns(state, plan)
                else:
                    samples[index].append((elapsed, state))
            if round_number >= 3 and time.perf_counter() - started > budget:
                break

    def all_sync() -> None:
        started = time.perf_counter()
        for round_number in range(reps + 1):
            for index, (runner, plan) in enumerate(runners):
                state = RunState(plan, stamps=[] if stamps else None)
                begin = time.perf_counter_ns()
                output = _one_sync(runner, state)
                elapsed = time.perf_counter_ns() - begin
                if round_number == 0:
                    _check_output(output, f"{plan}")
                    _check_turns(state, plan)
                else:
                    samples[index].append((elapsed, state))
            if round_number >= 3 and time.perf_counter() - started > budget:
                break

    if is_async(runners[0][0]):
        asyncio.run(all_async())
    else:
        all_sync()
    return samples


def _check_turns(state: RunState, plan: Plan) -> None:
    if state.turn != plan.turns:
        raise AssertionError(f"{plan}: the model was called {state.turn} times, not {plan.turns}")


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Median with min and max, and the samples themselves (the harness pools them)."""
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
        "values": [round(v, 3) for v in values],
    }


# -- the scenarios -----------------------------------------------------------------------------


@dataclass
class Settings:
    quick: bool
    reps: int = field(init=False)
    budget: float = field(init=False)

    def __post_init__(self) -> None:
        # per process; the harness runs each scenario in several rounds and pools the samples
        self.reps = 3 if self.quick else 300
        self.budget = 0.2 if self.quick else 2.0


def s1(driver: Driver, settings: Settings) -> dict[str, Any]:
    """Per-turn overhead: 20 turns x 3 calls to add(a, b); per extra call from 1 vs 3 calls."""
    figures: dict[str, Any] = {}
    for tool_async in (True, False):
        kind = "async" if tool_async else "sync"
        one = Plan(turns=20, calls=1, is_async=tool_async)
        three = Plan(turns=20, calls=3, is_async=tool_async)
        reason = driver.supports(three)
        if reason is not None:
            figures[f"per_turn_us_{kind}"] = {"na": reason}
            figures[f"per_extra_call_us_{kind}"] = {"na": reason}
            continue
        ones, threes = timed_runs(
            [(driver.make(one), one), (driver.make(three), three)], settings.reps, settings.budget
        )
        per_turn = [ns / 1000 / three.turns for ns, _ in threes]
        tool_turns = three.turns - 1
        extra = [
            (t3 - t1) / 1000 / tool_turns / 2 for (t1, _), (t3, _) in zip(ones, threes, strict=True)
        ]
        figures[f"per_turn_us_{kind}"] = spread(per_turn)
        figures[f"per_extra_call_us_{kind}"] = spread(extra)
    return figures


def s2(driver: Driver, settings: Settings) -> dict[str, Any]:
    """Parallelism: one turn of 8 calls to a tool that waits 0.1 s, with a sync and with an
    async tool, and one turn of 100 calls to the sync tool; wall time of the run."""
    figures: dict[str, Any] = {}
    for tool_async in (True, False):
        kind = "async" if tool_async else "sync"
        plan = Plan(turns=2, calls=8, tool="wait", is_async=tool_async)
        reason = driver.supports(plan)
        if reason is not None:
            figures[f"wall_s_{kind}"] = {"na": reason}
            continue
        (runs,) = timed_runs([(driver.make(plan), plan)], 2 if settings.quick else 5, 1e9)
        figures[f"wall_s_{kind}"] = spread([ns / 1e9 for ns, _ in runs])
    # 100 blocking calls at once: 0.1 s only for a loop that does not cap its tool threads
    plan = Plan(turns=2, calls=100, tool="wait", is_async=False)
    reason = driver.supports(plan)
    if reason is not None:
        figures["wall_s_sync_100"] = {"na": reason}
    else:
        (runs,) = timed_runs([(driver.make(plan), plan)], 2 if settings.quick else 3, 1e9)
        figures["wall_s_sync_100"] = spread([ns / 1e9 for ns, _ in runs])
    return figures


def s3(driver: Driver, settings: Settings) -> dict[str, Any]:
    """Concurrency: 1000 runs at once of 5 turns x 3 async adds, the model waiting 10 ms a call.

    Run in a fresh process (the harness starts one per sample), so peak RSS is this scenario's.
    """
    count = 20 if settings.quick else 1000
    plan = Plan(turns=5, calls=3, is_async=True, latency=0.010)
    if driver.supports(plan) is not None:
        plan = Plan(turns=5, calls=3, is_async=False, latency=0.010)
    reason = driver.supports(plan)
    if reason is not None:
        return {"na": reason}
    runner = driver.make(plan)
    rss_before = _rss_mb()
    if is_async(runner):

        async def many() -> tuple[float, float]:
            await _one_async(runner, RunState(plan))  # warm-up
            states = [RunState(plan) for _ in range(count)]
            cpu0, wall0 = time.process_time(), time.perf_counter()
            outputs = await asyncio.gather(*(_one_async(runner, s) for s in states))
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            for output in outputs:
                _check_output(output, "S3")
            return wall, cpu

        wall, cpu = asyncio.run(many())
    else:
        _one_sync(runner, RunState(plan))
        states = [RunState(plan) for _ in range(count)]
        with ThreadPoolExecutor(count) as pool:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            outputs = list(pool.map(lambda s: _one_sync_threaded(runner, s), states))
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        for output in outputs:
            _check_output(output, "S3")
    return {
        "tool": "async" if plan.is_async else "sync",
        "runs": count,
        "wall_s": wall,
        "cpu_ms_per_run": cpu * 1000 / count,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_mb": rss_before,
    }


def _one_sync_threaded(runner: Runner, state: RunState) -> Any:
    CURRENT.set(state)  # each pool thread has its own context
    return runner.run()


def s5(driver: Driver, settings: Settings) -> dict[str, Any]:
    """Growth: a 200-turn run, one 2 KB tool result per turn; cost of turns 1-20 vs 180-199."""
    turns = 40 if settings.quick else 200
    plan = Plan(turns=turns, calls=1, tool="page", is_async=True)
    if driver.supports(plan) is not None:
        plan = Plan(turns=turns, calls=1, tool="page", is_async=False)
    reason = driver.supports(plan)
    if reason is not None:
        return {"na": reason}
    (runs,) = timed_runs([(driver.make(plan), plan)], 2 if settings.quick else 6, 15.0, True)
    curves: list[list[float]] = []
    for _, state in runs:
        stamps = state.stamps or []
        curves.append([(b - a) / 1000 for a, b in itertools.pairwise(stamps)])
    # turn k costs from model call k to model call k + 1 (its tools, the framework, the model)
    per_turn = [statistics.median(c[k] for c in curves) for k in range(turns - 1)]
    early_window = (0, 20)
    late_window = (turns - 21, turns - 1)
    early = [statistics.median(c[slice(*early_window)]) for c in curves]
    late = [statistics.median(c[slice(*late_window)]) for c in curves]
    return {
        "tool": "async" if plan.is_async else "sync",
        "turns": turns,
        "early_us": spread(early),
        "late_us": spread(late),
        "growth": spread([b / a for a, b in zip(early, late, strict=True)]),
        "windows": [
            [early_window[0] + 1, early_window[1]],
            [late_window[0] + 1, late_window[1]],
        ],
        "per_turn_us": per_turn,
    }


def _rss_mb() -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


SCENARIOS: dict[str, Callable[[Driver, Settings], dict[str, Any]]] = {
    "S1": s1,
    "S2": s2,
    "S3": s3,
    "S5": s5,
}


def main(
    driver: Driver, extra: dict[str, Callable[[Driver, Settings], dict[str, Any]]] | None = None
) -> None:
    """Command line of every driver: run one scenario and print its JSON."""
    scenarios = {**SCENARIOS, **(extra or {})}
    parser = argparse.ArgumentParser(description=f"benchmark scenarios for {driver.name}")
    parser.add_argument("scenario", choices=sorted(scenarios))
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks, not figures")
    args = parser.parse_args()
    gc.collect()
    figures = scenarios[args.scenario](driver, Settings(args.quick))
    print(
        json.dumps(
            {
                "library": driver.name,
                "scenario": args.scenario,
                "quick": args.quick,
                "python": platform.python_version(),
                "versions": driver.versions(),
                "pid": os.getpid(),
                "figures": figures,
            }
        )
    )
    sys.stdout.flush()
