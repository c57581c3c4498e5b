"""All calls of a turn run at once; one failure, timeout or hang never loses the others."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from steadyloop import (
    Agent,
    AssistantMessage,
    FatalToolError,
    ToolCall,
    ToolResult,
    tool,
)
from steadyloop.retry import Backoff
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.transcript import calls_answered

PARTIES = 8


def fan_out(name: str, count: int = PARTIES, arguments: str = "{}") -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(ToolCall(f"c{i}", name, arguments) for i in range(count)),
        stop_reason="tool_use",
    )


def make_agent(model: Any, *tools: Any, **options: Any) -> Agent:
    return Agent(model, tools=tools, backoff=Backoff.none(), **options)


def results(messages: tuple[Any, ...]) -> list[ToolResult]:
    return [m for m in messages if isinstance(m, ToolResult)]


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown so blocked tool threads can finish."""
    event = threading.Event()
    yield event
    event.set()


def no_other_tasks() -> bool:
    return asyncio.all_tasks() == {asyncio.current_task()}


async def test_eight_blocking_sync_tools_really_run_at_once() -> None:
    barrier = threading.Barrier(PARTIES, timeout=10)

    def rendezvous() -> str:
        index = barrier.wait()  # raises BrokenBarrierError unless all 8 threads get here
        return f"passed {index >= 0}"

    model = ScriptedModel([fan_out("rendezvous"), "all met"])
    async with make_agent(model, rendezvous) as agent:
        result = await agent.run("meet")
    done = results(result.messages)
    assert [r.content for r in done] == ["passed True"] * PARTIES
    assert not any(r.is_error for r in done)
    assert not barrier.broken


@pytest.mark.parametrize(("runs", "calls"), [(1, 100), (4, 25)])
async def test_a_hundred_blocking_sync_calls_all_run_at_once(runs: int, calls: int) -> None:
    barrier = threading.Barrier(runs * calls, timeout=10)

    @tool(timeout=30)
    def rendezvous() -> str:
        barrier.wait()  # raises BrokenBarrierError unless every call gets a thread at once
        return "met"

    model = FunctionModel(
        lambda messages, _: (
            fan_out("rendezvous", calls)
            if not isinstance(messages[-1], ToolResult)
            else AssistantMessage("all met")
        )
    )
    async with make_agent(model, rendezvous) as agent:
        done = await asyncio.gather(*(agent.run(f"meet {n}") for n in range(runs)))
    for result in done:
        assert [r.content for r in results(result.messages)] == ["met"] * calls
    assert not barrier.broken


async def test_eight_async_tools_run_at_once() -> None:
    barrier = asyncio.Barrier(PARTIES)

    async def rendezvous() -> str:
        async with asyncio.timeout(10):
            await barrier.wait()
        return "passed"

    model = ScriptedModel([fan_out("rendezvous"), "all met"])
    result = await make_agent(model, rendezvous).run("meet")
    assert [r.content for r in results(result.messages)] == ["passed"] * PARTIES
    assert no_other_tasks()


async def test_sync_and_async_tools_overlap() -> None:
    loop = asyncio.get_running_loop()
    sync_running = asyncio.Event()
    async_seen = threading.Event()

    def blocking() -> str:
        loop.call_soon_threadsafe(sync_running.set)
        return "sync done" if async_seen.wait(10) else "async never ran"

    async def waiting() -> str:
        async with asyncio.timeout(10):
            await sync_running.wait()
        async_seen.set()
        return "async done"

    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(ToolCall("a", "blocking", "{}"), ToolCall("b", "waiting", "{}"))
            ),
            "ok",
        ]
    )
    async with make_agent(model, blocking, waiting) as agent:
        result = await agent.run("go")
    assert [r.content for r in results(result.messages)] == ["sync done", "async done"]


async def test_one_failure_neither_cancels_nor_loses_the_others() -> None:
    async def slow(label: str, seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"{label} ok"

    def broken(label: str, seconds: float) -> str:
        raise RuntimeError("boom")

    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall("a", "slow", '{"label": "A", "seconds": 0.5}'),
                    ToolCall("b", "broken", '{"label": "B", "seconds": 0}'),
                    ToolCall("c", "slow", '{"label": "C", "seconds": 0.5}'),
                )
            ),
            "done",
        ]
    )
    started = time.perf_counter()
    async with make_agent(model, slow, broken) as agent:
        result = await agent.run("go")
    elapsed = time.perf_counter() - started
    done = results(result.messages)
    assert [r.call_id for r in done] == ["a", "b", "c"]
    assert [r.content for r in done] == ["A ok", "broken failed: RuntimeError", "C ok"]
    assert [r.is_error for r in done] == [False, True, False]
    assert elapsed < 0.9  # generous: one after the other would take 1 s
    assert no_other_tasks()


async def test_a_hanging_call_times_out_alone(release: threading.Event) -> None:
    @tool(timeout=0.1)
    def hang_sync() -> str:
        release.wait(30)
        return "late"

    @tool(timeout=0.1)
    async def hang_async() -> str:
        await asyncio.Event().wait()
        return "never"

    async def fine() -> str:
        await asyncio.sleep(0.01)
        return "fine"

    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall("a", "hang_sync", "{}"),
                    ToolCall("b", "fine", "{}"),
                    ToolCall("c", "hang_async", "{}"),
                )
            ),
            "done",
        ]
    )
    async with make_agent(model, hang_sync, hang_async, fine) as agent:
        result = await agent.run("go")
    done = results(result.messages)
    assert [r.content for r in done] == [
        "hang_sync timed out after 0.1s",
        "fine",
        "hang_async timed out after 0.1s",
    ]
    assert result.output == "done"
    assert no_other_tasks()


async def test_a_fatal_error_cancels_the_siblings_and_leaves_no_task() -> None:
    cancelled: list[int] = []

    async def wait(n: int) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        return "never"

    async def fatal() -> str:
        await asyncio.sleep(0.01)
        raise FatalToolError("stop everything")

    calls = [ToolCall(f"w{n}", "wait", f'{{"n": {n}}}') for n in range(4)]
    model = ScriptedModel([AssistantMessage(tool_calls=(*calls, ToolCall("f", "fatal", "{}")))])
    with pytest.raises(FatalToolError):
        await make_agent(model, wait, fatal).run("go")
    assert sorted(cancelled) == [0, 1, 2, 3]
    assert no_other_tasks()


async def test_cancelling_the_run_leaves_no_task_behind() -> None:
    running = asyncio.Event()

    async def wait() -> str:
        running.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedModel([fan_out("wait", 4), "never"])
    task = asyncio.create_task(make_agent(model, wait).run("go"))
    await running.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert no_other_tasks()


async def test_no_task_is_left_after_an_ordinary_run() -> None:
    async def quick(n: int = 0) -> str:
        return "ok"

    model = ScriptedModel([fan_out("quick", 20), fan_out("quick", 3), "done"])
    result = await make_agent(model, quick).run("go")
    assert calls_answered(result.messages)
    assert no_other_tasks()


async def test_a_deadline_around_the_whole_run_cancels_every_call() -> None:
    cancelled: list[str] = []

    async def wait(label: str) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(label)
            raise
        return "never"

    calls = tuple(ToolCall(f"c{i}", "wait", f'{{"label": "{i}"}}') for i in range(3))
    model = ScriptedModel([AssistantMessage(tool_calls=calls), "never"])
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await make_agent(model, wait).run("go")
    assert sorted(cancelled) == ["0", "1", "2"]
    assert no_other_tasks()
