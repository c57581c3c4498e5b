"""steadyloop, driven by a minimal `Model` subclass that replies instantly from the script.

S6 (steadyloop only) runs S1's async configuration with the SQLite run log on and off; it
reports "n/a" until this checkout has a run log (`steadyloop.store`, `Agent(store=...)`).
S7 (steadyloop only) runs S1's async configuration and S3's concurrent runs with OpenTelemetry
tracing on and off; "n/a" without `opentelemetry-sdk` or `Agent(tracer_provider=...)`.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import common

from steadyloop import Agent, AssistantMessage, Limits, ToolCall, tool
from steadyloop.models.base import Model, ModelRequest


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
    def __init__(self, plan: common.Plan, **options: Any) -> None:
        self.agent = Agent(
            BenchModel(),
            tools=[tool(plan.function)],
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
    is charged to the logged block and not to the next one.
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

        async def timed(runner: SteadyloopRunner, after: Callable[[], object]) -> float:
            began = time.perf_counter_ns()
            for _ in range(block):
                state = common.RunState(plan)
                common.CURRENT.set(state)
                if await runner.run() != common.FINAL_TEXT or state.turn != plan.turns:
                    raise AssertionError("S6: a run did not go as planned")
            after()
            return (time.perf_counter_ns() - began) / 1000 / block / plan.turns

        async def rounds() -> tuple[list[float], list[float], list[float]]:
            off: list[float] = []
            on: list[float] = []
            batch: list[float] = []
            started = time.perf_counter()
            for number in range(settings.reps + 1):
                times = (await timed(plain, lambda: None), await timed(logged, flush))
                if gathering is not None:
                    times += (await timed(gathering, batch_flush),)
                if number > 0:  # the first round warms up
                    off.append(times[0])
                    on.append(times[1])
                    batch.extend(times[2:])
                if number >= 3 and time.perf_counter() - started > settings.budget * 2:
                    break
            return off, on, batch

        off, on, batch = asyncio.run(rounds())
        for opened in (store, batch_store):
            close = getattr(opened, "close", None)
            if close is not None:
                close()
    figures = {
        "per_turn_us_off": common.spread(off),
        "per_turn_us_on": common.spread(on),
        "ratio": common.spread([b / a for a, b in zip(off, on, strict=True)]),
    }
    if batch:
        figures["per_turn_us_batch"] = common.spread(batch)
        figures["ratio_batch"] = common.spread([b / a for a, b in zip(off, batch, strict=True)])
    return figures


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
    block = 2 if settings.quick else 10
    spans_per_run = 1 + plan.turns + (plan.turns - 1) * plan.calls

    async def timed(runner: SteadyloopRunner) -> float:
        began = time.perf_counter_ns()
        for _ in range(block):
            state = common.RunState(plan)
            common.CURRENT.set(state)
            if await runner.run() != common.FINAL_TEXT or state.turn != plan.turns:
                raise AssertionError("S7: a run did not go as planned")
        elapsed = (time.perf_counter_ns() - began) / 1000 / block / plan.turns
        if runner is traced and len(exporter.get_finished_spans()) != block * spans_per_run:
            raise AssertionError("S7: the traced runs did not export every span")
        exporter.clear()
        return elapsed

    async def per_turn() -> tuple[list[float], list[float], list[float]]:
        off: list[float] = []
        on: list[float] = []
        noop: list[float] = []
        started = time.perf_counter()
        for number in range(settings.reps + 1):
            times = (await timed(plain), await timed(traced), await timed(api_only))
            if number > 0:  # the first round warms up
                off.append(times[0])
                on.append(times[1])
                noop.append(times[2])
            if number >= 3 and time.perf_counter() - started > settings.budget * 3:
                break
        return off, on, noop

    off, on, noop = asyncio.run(per_turn())
    cpu_off, cpu_on = asyncio.run(_concurrent_cpu(provider, exporter, settings))
    return {
        "per_turn_us_untraced": common.spread(off),
        "per_turn_us_traced": common.spread(on),
        "tracing_ratio": common.spread([b / a for a, b in zip(off, on, strict=True)]),
        "per_turn_us_noop_provider": common.spread(noop),
        "noop_provider_ratio": common.spread([b / a for a, b in zip(off, noop, strict=True)]),
        "concurrent_cpu_ms_untraced": common.spread(cpu_off),
        "concurrent_cpu_ms_traced": common.spread(cpu_on),
        "concurrent_tracing_ratio": common.spread(
            [b / a for a, b in zip(cpu_off, cpu_on, strict=True)]
        ),
    }


async def _concurrent_cpu(
    provider: Any, exporter: Any, settings: common.Settings
) -> tuple[list[float], list[float]]:
    """CPU ms per run of S3's concurrent runs, untraced and traced, in alternating rounds."""
    count = 20 if settings.quick else 1000
    plan = common.Plan(turns=5, calls=3, is_async=True, latency=0.010)
    plain = SteadyloopRunner(plan)
    traced = SteadyloopRunner(plan, tracer_provider=provider)

    async def one(runner: SteadyloopRunner, state: common.RunState) -> str:
        common.CURRENT.set(state)
        return await runner.run()

    async def cpu_per_run(runner: SteadyloopRunner) -> float:
        states = [common.RunState(plan) for _ in range(count)]
        cpu = time.process_time()
        outputs = await asyncio.gather(*(one(runner, s) for s in states))
        cpu = time.process_time() - cpu
        if any(output != common.FINAL_TEXT for output in outputs):
            raise AssertionError("S7: a concurrent run did not go as planned")
        exporter.clear()
        return cpu * 1000 / count

    off: list[float] = []
    on: list[float] = []
    for number in range(2 if settings.quick else 6):
        times = (await cpu_per_run(plain), await cpu_per_run(traced))
        if number > 0:  # the first round warms up
            off.append(times[0])
            on.append(times[1])
    return off, on


if __name__ == "__main__":
    common.main(SteadyloopDriver(), {"S6": s6, "S7": s7})
