"""steadyloop, driven by a minimal `Model` subclass that replies instantly from the script.

S6 (steadyloop only) runs S1's async configuration with the SQLite run log on and off; it
reports "n/a" until this checkout has a run log (`steadyloop.store`, `Agent(store=...)`).
S7 (steadyloop only) runs S1's async configuration and S3's concurrent runs with OpenTelemetry
tracing on and off; "n/a" without `opentelemetry-sdk` or `Agent(tracer_provider=...)`.
S10 (steadyloop only) runs S1's async configuration with each feature of the production surface
in use (a typed answer, dependencies, an approval gate, the SQLite run log) against none, and
S3's concurrent runs with all of them against none.
S9 (steadyloop only) times an agent's first model call with one stdio MCP server against the
official SDK's minimal client listing the same server's tools (`mcp_probe.py`), fresh
interpreters in turn; "n/a" without Node.js.
S14 (steadyloop only) measures this round's features (sessions, sub-agents, per-tool limits,
fallback models, MCP, the Gemini adapter, evals), each unused and used (`features.py`).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import bare_driver
import cli_start
import common
import floors
from pydantic import BaseModel

from steadyloop import (
    Agent,
    Approve,
    AssistantMessage,
    Limits,
    PendingCall,
    RunContext,
    ToolCall,
    tool,
)
from steadyloop.models.base import Model, ModelRequest
from steadyloop.store import SQLiteStore


class BenchModel(Model):
    """Replies with the calls `common.next_reply()` asks for; no other work."""

    name = "bench"

    async def request(self, request: ModelRequest) -> AssistantMessage:
        if wait := common.latency():
            await asyncio.sleep(wait)
        calls = common.next_reply()
        if calls is None:
            return AssistantMessage(common.FINAL_TEXT, stop_reason="end_turn")
        return AssistantMessage(
            tool_calls=tuple(ToolCall(c.id, c.name, c.arguments_json) for c in calls),
            stop_reason="tool_use",
        )


class SteadyloopRunner:
    """S1's agent with `options`; `gated`: its tool waits for the approver's decision."""

    def __init__(self, plan: common.Plan, gated: bool = False, **options: Any) -> None:
        self.agent = Agent(
            BenchModel(),
            tools=[tool(plan.function, approve=gated)],
            limits=Limits(max_turns=plan.turns + 1, max_context_tokens=10_000_000),
            **options,
        )

    async def run(self) -> str:
        result = await self.agent.run(common.PROMPT)
        return result.output


class SteadyloopDriver:
    name = "steadyloop"

    def versions(self) -> dict[str, str]:
        return {
            "steadyloop": importlib.metadata.version("steadyloop"),
            "pydantic": importlib.metadata.version("pydantic"),
            "python": platform.python_version(),
        }

    def supports(self, plan: common.Plan) -> str | None:
        return None

    def make(self, plan: common.Plan) -> SteadyloopRunner:
        return SteadyloopRunner(plan)


def s6(driver: common.Driver, settings: common.Settings) -> dict[str, Any]:
    """S1's async run (20 turns x 3 adds) with the SQLite run log on, against off.

    "on" is the default durability (each reply committed before its calls start, each result
    before the model reads it); "batch" is `Agent(durability="batch")`, where the log writer
    gathers events in the background (n/a on a checkout without it). Runs go in blocks of ten,
    and a logged block ends with the log flushed, so work the log leaves to a background writer
    is charged to the logged block and not to the next one; the blocks go in a new order each
    round.
    """
    if importlib.util.find_spec("steadyloop.store") is None:
        return {"na": "n/a (no run log)"}
    plan = common.Plan(turns=20, calls=3, is_async=True)
    block = 2 if settings.quick else 10
    with tempfile.TemporaryDirectory() as folder:
        try:
            logged = SteadyloopRunner(plan, store=Path(folder) / "runs.sqlite3")
        except TypeError as exc:
            return {"na": f"n/a (Agent does not take store=: {exc})"}
        store = getattr(logged.agent, "store", None)
        flush = getattr(store, "flush", lambda: None)
        plain = SteadyloopRunner(plan)
        try:
            gathering: SteadyloopRunner | None = SteadyloopRunner(
                plan, store=Path(folder) / "batch.sqlite3", durability="batch"
            )
        except TypeError:
            gathering = None
        batch_store = getattr(getattr(gathering, "agent", None), "store", None)
        batch_flush = getattr(batch_store, "flush", lambda: None)

        floor, batch_floor, bare = _sqlite_floors(plan, logged, flush, Path(folder))

        async def timed(runner: Runs, after: Callable[[], object]) -> float:
            return await per_turn_us(runner, plan, block, "S6", after)

        async def rounds() -> dict[str, list[float]]:
            samples: dict[str, list[float]] = {
                k: [] for k in ("off", "on", "batch", "bare", "sqlite_floor", "sqlite_batch_floor")
            }
            blocks: dict[str, tuple[Runs, Callable[[], object]]] = {
                "off": (plain, lambda: None),
                "on": (logged, flush),
                "bare": (bare, lambda: None),
                "sqlite_floor": (floor, lambda: None),
            }
            if gathering is not None:
                blocks["batch"] = (gathering, batch_flush)
                blocks["sqlite_batch_floor"] = (batch_floor, lambda: None)
            started = time.perf_counter()
            for number in range(settings.reps + 1):
                # In a new order each round (as S10): what a block leaves behind (a writer
                # thread woken, the file system's own writing) must not always slow the same
                # configuration after it.
                order = list(blocks.items())
                random.Random(number).shuffle(order)
                times = {name: await timed(*block) for name, block in order}
                if number > 0:  # the first round warms up
                    for name, value in times.items():
                        samples[name].append(value)
                if number >= 3 and time.perf_counter() - started > settings.budget * 3:
                    break
            return samples

        samples = asyncio.run(rounds())
        floor.close()
        batch_floor.close()
        for opened in (store, batch_store):
            close = getattr(opened, "close", None)
            if close is not None:
                close()
    off, on, batch = samples["off"], samples["on"], samples["batch"]
    figures = {
        "per_turn_us_off": common.spread(off),
        "per_turn_us_on": common.spread(on),
        "ratio": common.spread([b / a for a, b in zip(off, on, strict=True)]),
        **_against_floor(samples, ("off", "on"), ("bare", "sqlite_floor"), "log"),
    }
    if batch:
        figures["per_turn_us_batch"] = common.spread(batch)
        figures["ratio_batch"] = common.spread([b / a for a, b in zip(off, batch, strict=True)])
        figures.update(
            _against_floor(samples, ("off", "batch"), ("bare", "sqlite_batch_floor"), "batch_log")
        )
    return figures


def _sqlite_floors(
    plan: common.Plan, logged: SteadyloopRunner, flush: Callable[[], object], folder: Path
) -> tuple[floors.SqliteFloor, floors.SqliteBatchFloor, bare_driver.BareRunner]:
    """S6's floors (plain sqlite3 committing the rows the log committed for one run: at the
    same points, and as `durability="batch"` at least must) and the bare loop they are measured
    against; recording the rows is a warm-up run."""

    def one_run() -> None:
        common.CURRENT.set(common.RunState(plan))
        asyncio.run(logged.run())
        flush()

    run_id, transactions = floors.record_log_transactions(logged.agent.store, one_run)

    def log_file(name: str) -> Path:
        path = folder / f"{name}.sqlite3"
        SQLiteStore(path).close()  # the log's schema, made the log's way
        return path

    return (
        floors.SqliteFloor(plan, log_file("floor"), run_id, transactions),
        floors.SqliteBatchFloor(plan, log_file("batch_floor"), run_id, transactions),
        bare_driver.BareRunner(plan),
    )


def _against_floor(
    samples: dict[str, list[float]],
    ours: tuple[str, str],
    floor: tuple[str, str],
    name: str,
    figure: str = "per_turn_us",
    prefix: str = "",
) -> dict[str, Any]:
    """Our feature's added cost (on minus off) beside its floor's (the bare loop doing the same
    work through the library underneath, minus the bare loop), per round, and their ratio: the
    ratio of this process's median added costs (each round's own quotient is too noisy)."""
    off, on = (samples[k] for k in ours)
    bare, done = (samples[k] for k in floor)
    added = [b - a for a, b in zip(off, on, strict=True)]
    floor_added = [b - a for a, b in zip(bare, done, strict=True)]
    return {
        f"{figure}_{floor[0]}": common.spread(bare),
        f"{figure}_{floor[1]}": common.spread(done),
        f"{prefix}{name}_added": common.spread(added),
        f"{prefix}{floor[1]}_added": common.spread(floor_added),
        f"{prefix}{name}_floor_ratio": common.spread(
            [statistics.median(added) / statistics.median(floor_added)]
        ),
    }


def s7(driver: common.Driver, settings: common.Settings) -> dict[str, Any]:
    """Tracing on against off: S1's async run (20 turns x 3 adds) per turn, and S3's concurrent
    5-turn runs (the model waiting 10 ms a call) in CPU per run.

    "On" is `Agent(tracer_provider=...)` with the SDK's provider, a `SimpleSpanProcessor` and an
    in-memory exporter, so every span is made, ended and exported in the run's own time; the
    exporter is emptied between blocks, outside the timing. A third configuration traces to the
    API's no-op provider: steadyloop's own share of the cost, without the SDK's. The three
    alternate block by block.
    """
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.trace import NoOpTracerProvider
    except ModuleNotFoundError:
        return {"na": "n/a (opentelemetry-sdk is not installed)"}
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    plan = common.Plan(turns=20, calls=3, is_async=True)
    try:
        traced = SteadyloopRunner(plan, tracer_provider=provider)
    except TypeError as exc:
        return {"na": f"n/a (Agent does not take tracer_provider=: {exc})"}
    plain = SteadyloopRunner(plan)
    api_only = SteadyloopRunner(plan, tracer_provider=NoOpTracerProvider())
    floor = floors.OtelFloor(plan, provider, asyncio.run(_record_spans(plan, traced, exporter)))
    bare = bare_driver.BareRunner(plan)
    block = 2 if settings.quick else 10
    spans_per_run = 1 + plan.turns + (plan.turns - 1) * plan.calls

    async def timed(runner: Runs) -> float:
        elapsed = await per_turn_us(runner, plan, block, "S7", lambda: None)
        exported = len(exporter.get_finished_spans())
        if runner in (traced, floor) and exported != block * spans_per_run:
            raise AssertionError("S7: the traced runs did not export every span")
        exporter.clear()
        return elapsed

    async def per_turn() -> dict[str, list[float]]:
        runners = {
            "untraced": plain,
            "traced": traced,
            "noop": api_only,
            "bare": bare,
            "otel_floor": floor,
        }
        samples: dict[str, list[float]] = {name: [] for name in runners}
        started = time.perf_counter()
        for number in range(settings.reps + 1):
            times = {name: await timed(runner) for name, runner in runners.items()}
            if number > 0:  # the first round warms up
                for name, value in times.items():
                    samples[name].append(value)
            if number >= 3 and time.perf_counter() - started > settings.budget * 3:
                break
        return samples

    samples = asyncio.run(per_turn())
    off, on, noop = samples["untraced"], samples["traced"], samples["noop"]
    cpu = asyncio.run(_concurrent_cpu(provider, exporter, settings))
    cpu_off, cpu_on = cpu["untraced"], cpu["traced"]
    concurrent_floor = _against_floor(
        cpu,
        ("untraced", "traced"),
        ("bare", "otel_floor"),
        "tracing",
        "concurrent_cpu_ms",
        "concurrent_",
    )
    return {
        "per_turn_us_untraced": common.spread(off),
        "per_turn_us_traced": common.spread(on),
        "tracing_ratio": common.spread([b / a for a, b in zip(off, on, strict=True)]),
        "per_turn_us_noop_provider": common.spread(noop),
        "noop_provider_ratio": common.spread([b / a for a, b in zip(off, noop, strict=True)]),
        **_against_floor(samples, ("untraced", "traced"), ("bare", "otel_floor"), "tracing"),
        "concurrent_cpu_ms_untraced": common.spread(cpu_off),
        "concurrent_cpu_ms_traced": common.spread(cpu_on),
        "concurrent_tracing_ratio": common.spread(
            [b / a for a, b in zip(cpu_off, cpu_on, strict=True)]
        ),
        **concurrent_floor,
    }


async def _record_spans(plan: common.Plan, traced: SteadyloopRunner, exporter: Any) -> Any:
    """The spans one traced run of `plan` makes, for the floor to make the same (a warm-up)."""
    exporter.clear()
    common.CURRENT.set(common.RunState(plan))
    await traced.run()
    recorded = floors.recorded_spans(exporter)
    exporter.clear()
    return recorded


async def _concurrent_cpu(
    provider: Any, exporter: Any, settings: common.Settings
) -> dict[str, list[float]]:
    """CPU ms per run of S3's concurrent runs, untraced, traced, and the bare loop without and
    with the SDK making the same spans (the floor), in alternating rounds."""
    plan = common.Plan(turns=5, calls=3, is_async=True, latency=0.010)
    traced = SteadyloopRunner(plan, tracer_provider=provider)
    recorded = await _record_spans(plan, traced, exporter)
    runners: dict[str, Runs] = {
        "untraced": SteadyloopRunner(plan),
        "traced": traced,
        "bare": bare_driver.BareRunner(plan),
        "otel_floor": floors.OtelFloor(plan, provider, recorded),
    }
    return await cpu_per_run(plan, runners, settings, "S7", lambda _: exporter.clear())


class Runs(Protocol):
    async def run(self) -> str: ...


async def per_turn_us(
    runner: Runs, plan: common.Plan, block: int, scenario: str, settle: Callable[[], object]
) -> float:
    """µs per turn of `block` runs of `plan` one after another, each checked; `settle()` ends
    the timing (waiting for a run log to be written)."""
    began = time.perf_counter_ns()
    for _ in range(block):
        state = common.RunState(plan)
        common.CURRENT.set(state)
        if await runner.run() != common.FINAL_TEXT or state.turn != plan.turns:
            raise AssertionError(f"{scenario}: a run did not go as planned")
    settle()
    return (time.perf_counter_ns() - began) / 1000 / block / plan.turns


async def cpu_per_run_pair(
    plan: common.Plan,
    first: Runs,
    second: Runs,
    settings: common.Settings,
    scenario: str,
    settle: Callable[[Any], object],
) -> tuple[list[float], list[float]]:
    """`cpu_per_run` of two runners."""
    cpu = await cpu_per_run(plan, {"first": first, "second": second}, settings, scenario, settle)
    return cpu["first"], cpu["second"]


async def cpu_per_run(
    plan: common.Plan,
    runners: dict[str, Runs],
    settings: common.Settings,
    scenario: str,
    settle: Callable[[Any], object],
) -> dict[str, list[float]]:
    """CPU ms per run of many concurrent runs of `plan` (1000; 20 when quick) by each runner
    in turn, in rounds, the first round a warm-up. `settle(runner)` ends each timing (waiting
    for a run log to be written, emptying an exporter)."""
    count = 20 if settings.quick else 1000

    async def one(runner: Runs, state: common.RunState) -> str:
        common.CURRENT.set(state)
        return await runner.run()

    async def measure(runner: Runs) -> float:
        states = [common.RunState(plan) for _ in range(count)]
        cpu = time.process_time()
        outputs = await asyncio.gather(*(one(runner, s) for s in states))
        settle(runner)
        cpu = time.process_time() - cpu
        if any(output != common.FINAL_TEXT for output in outputs):
            raise AssertionError(f"{scenario}: a concurrent run did not go as planned")
        return cpu * 1000 / count

    samples: dict[str, list[float]] = {name: [] for name in runners}
    for number in range(2 if settings.quick else 6):
        times = {name: await measure(runner) for name, runner in runners.items()}
        if number > 0:  # the first round warms up
            for name, value in times.items():
                samples[name].append(value)
    return samples


class Shop:
    """The dependencies S10's runs carry (`deps=`), read by its tool through `RunContext`."""

    offset = 0


class Answer(BaseModel):
    """S10's typed answer."""

    answer: str


async def add_in_shop(ctx: RunContext[Shop], a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: the first integer.
        b: the second integer.
    """
    return a + b + ctx.deps.offset


add_in_shop.__name__ = add_in_shop.__qualname__ = "add"


class AnsweringModel(BenchModel):
    """`BenchModel`, but its last reply calls `final_answer` when the run wants a typed answer."""

    async def request(self, request: ModelRequest) -> AssistantMessage:
        reply = await super().request(request)
        if reply.tool_calls or not any(t.name == "final_answer" for t in request.tools):
            return reply
        answer = json.dumps({"answer": reply.text})
        return AssistantMessage(tool_calls=(ToolCall("final", "final_answer", answer),))


class HoppingModel(AnsweringModel):
    """`AnsweringModel`, but each reply with tool calls first takes one `asyncio.to_thread`
    round trip of a no-op: the floor of a sync approver's cost, one thread hop per turn."""

    async def request(self, request: ModelRequest) -> AssistantMessage:
        reply = await super().request(request)
        if reply.tool_calls:
            await asyncio.to_thread(_nothing)
        return reply


def _nothing() -> None:
    """What `HoppingModel` runs in the thread."""


def approve_all(call: PendingCall, ctx: RunContext[Shop]) -> Approve:
    """A sync approver: asked in a worker thread, one visit of it per turn with gated calls."""
    return Approve()


async def approve_all_async(call: PendingCall, ctx: RunContext[Shop]) -> Approve:
    """An async approver: asked on the event loop, no thread."""
    return Approve()


FEATURES = ("output", "deps", "approvals", "store")
APPROVERS = {"approvals": approve_all, "approvals_async": approve_all_async}


class FeaturesRunner:
    """S1's run with some of the production features in use."""

    def __init__(self, plan: common.Plan, features: tuple[str, ...], folder: Path) -> None:
        uses_deps = "deps" in features
        function = add_in_shop if uses_deps else plan.function
        approver = next((APPROVERS[f] for f in features if f in APPROVERS), None)
        gated = tool(function, approve=approver is not None)
        self.output = Answer if "output" in features else None
        self.deps = Shop() if uses_deps else None
        store = folder / f"{'-'.join(features)}.sqlite3" if "store" in features else None
        self.agent: Agent[Any] = Agent(
            HoppingModel() if "hop" in features else AnsweringModel(),
            tools=[gated],
            limits=Limits(max_turns=plan.turns + 1, max_context_tokens=10_000_000),
            approver=approver,
            store=store,
        )

    async def run(self) -> str:
        result = await self.agent.run(common.PROMPT, output=self.output, deps=self.deps)
        output = result.output
        return output.answer if isinstance(output, Answer) else str(output)

    def flush(self) -> None:
        """Waits for the run log (if any) to have written everything."""
        flush = getattr(self.agent.store, "flush", None)
        if flush is not None:
            flush()


def s10(driver: common.Driver, settings: common.Settings) -> dict[str, Any]:
    """The production features, each in use against none: S1's async run per turn, in blocks
    of ten runs alternating configuration by configuration, in a new order each round (a block
    with the run log ends with it flushed), and S3's concurrent runs in CPU per run, with all of
    them against none. The approval gate is timed with a sync approver and with an async one,
    beside the floor of the sync one's cost, a thread hop per turn: the run with none whose model
    takes one `asyncio.to_thread` round trip of a no-op per turn with calls, against the run with
    none."""
    plan = common.Plan(turns=20, calls=3, is_async=True)
    block = 2 if settings.quick else 10
    configurations = {
        "none": (),
        **{f: (f,) for f in FEATURES},
        "approvals_async": ("approvals_async",),
        "all": FEATURES,
        "hop": ("hop",),  # none, but a thread hop per turn: a sync approver's floor
    }
    with tempfile.TemporaryDirectory() as folder:
        runners = {
            name: FeaturesRunner(plan, features, Path(folder))
            for name, features in configurations.items()
        }

        async def timed(runner: FeaturesRunner) -> float:
            return await per_turn_us(runner, plan, block, "S10", runner.flush)

        async def rounds() -> dict[str, list[float]]:
            samples: dict[str, list[float]] = {name: [] for name in runners}
            started = time.perf_counter()
            for number in range(settings.reps + 1):
                # In a new order each round: a run log's writer may still fold its file after
                # its block, and must not always slow the same configuration.
                order = list(runners.items())
                random.Random(number).shuffle(order)
                for name, runner in order:
                    elapsed = await timed(runner)
                    if number > 0:  # the first round warms up
                        samples[name].append(elapsed)
                if number >= 3 and time.perf_counter() - started > settings.budget * 3:
                    break
            return samples

        samples = asyncio.run(rounds())
        cpu_off, cpu_on = asyncio.run(_features_cpu(settings, Path(folder)))
        for runner in runners.values():
            asyncio.run(runner.agent.aclose())
    off = samples["none"]
    figures: dict[str, Any] = {"per_turn_us_none": common.spread(off)}
    hop = [b - a for a, b in zip(off, samples.pop("hop"), strict=True)]
    added = [b - a for a, b in zip(off, samples["approvals"], strict=True)]
    figures["thread_hop_us"] = common.spread(hop)
    figures["approvals_added_us"] = common.spread(added)
    figures["approvals_hop_ratio"] = common.spread([a / h for a, h in zip(added, hop, strict=True)])
    for name, values in samples.items():
        if name != "none":
            figures[f"per_turn_us_{name}"] = common.spread(values)
            figures[f"ratio_{name}"] = common.spread(
                [b / a for a, b in zip(off, values, strict=True)]
            )
    figures["concurrent_cpu_ms_none"] = common.spread(cpu_off)
    figures["concurrent_cpu_ms_all"] = common.spread(cpu_on)
    figures["concurrent_ratio_all"] = common.spread(
        [b / a for a, b in zip(cpu_off, cpu_on, strict=True)]
    )
    return figures


async def _features_cpu(settings: common.Settings, folder: Path) -> tuple[list[float], list[float]]:
    """CPU ms per run of S3's concurrent runs with no feature in use and with all of them."""
    plan = common.Plan(turns=5, calls=3, is_async=True, latency=0.010)
    plain = FeaturesRunner(plan, (), folder)
    featured = FeaturesRunner(plan, FEATURES, folder)
    try:
        return await cpu_per_run_pair(
            plan, plain, featured, settings, "S10", lambda runner: runner.flush()
        )
    finally:
        await featured.agent.aclose()


# The reference server "everything", pinned, installed with npm under bench/.venvs/ on first use.
EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
NPM_FOLDER = Path(__file__).resolve().parents[1] / ".venvs" / "npm"
PROBE = Path(__file__).resolve().parent / "mcp_probe.py"


def everything_command() -> list[str] | str:
    """The command line starting server-everything over stdio, or why it cannot run here."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "n/a (needs Node.js and npm)"
    script = NPM_FOLDER / "node_modules" / EVERYTHING / "dist" / "index.js"
    if not script.exists():
        NPM_FOLDER.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(NPM_FOLDER),
             f"{EVERYTHING}@{EVERYTHING_VERSION}"],
            check=True, capture_output=True,
        )  # fmt: skip
    return [node, str(script), "stdio"]


def _probe(mode: str, server: list[str]) -> tuple[float, int]:
    """Seconds from spawning a fresh interpreter to its `ready` line, and the tools it saw."""
    began = time.time()
    process = subprocess.Popen(
        [sys.executable, str(PROBE), mode, *server],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert process.stdout is not None
    line = process.stdout.readline().split()
    process.wait(timeout=60)
    if len(line) != 3 or line[0] != "ready":
        raise AssertionError(f"S9: the {mode} probe did not get ready (exit {process.returncode})")
    return float(line[1]) - began, int(line[2])


def s9(driver: common.Driver, settings: common.Settings) -> dict[str, Any]:
    """The first model call of an agent with one stdio MCP server (server-everything) against
    the official SDK's minimal client starting it and listing its tools, in turn, fresh
    interpreters each time (imports and the server's own start-up count for both)."""
    if importlib.util.find_spec("mcp") is None:
        return {"na": "n/a (the mcp package is not installed)"}
    server = everything_command()
    if isinstance(server, str):
        return {"na": server}
    if not settings.quick:
        _probe("sdk", server)  # warm the file cache: the first start reads everything from disk
    rounds = 1 if settings.quick else 7
    sdk_s: list[float] = []
    ours_s: list[float] = []
    for _ in range(rounds):
        seconds, sdk_tools = _probe("sdk", server)
        sdk_s.append(seconds)
        seconds, our_tools = _probe("steadyloop", server)
        ours_s.append(seconds)
        if our_tools != sdk_tools:
            raise AssertionError(f"S9: the agent saw {our_tools} tools, the SDK {sdk_tools}")
    ratios = [ours / sdk for ours, sdk in zip(ours_s, sdk_s, strict=True)]
    return {
        "sdk_s": common.spread(sdk_s),
        "steadyloop_s": common.spread(ours_s),
        "mcp_ratio": common.spread(ratios),
        "tools": sdk_tools,
    }


def s14(driver: common.Driver, settings: common.Settings) -> dict[str, Any]:
    """This round's features, each unused and used (bench/drivers/features.py)."""
    import features  # only S14's process loads it (and the SDKs it needs), not the others'

    return features.s14(driver, settings)


if __name__ == "__main__":
    common.main(
        SteadyloopDriver(),
        {"S6": s6, "S7": s7, "S9": s9, "S10": s10, "S13": cli_start.s13, "S14": s14},
    )
