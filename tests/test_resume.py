"""Resuming a logged run in-process: finished calls kept, unfinished ones settled safely."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from steadyloop import Agent, AssistantMessage, ToolCall, ToolResult, tool
from steadyloop.errors import ConfigError
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.transcript import calls_answered


async def test_resume_after_cancellation(tmp_path: Path) -> None:
    runs: list[str] = []
    release = asyncio.Event()
    started = asyncio.Event()

    @tool
    async def quick() -> str:
        """Returns at once."""
        runs.append("quick")
        return "quick ok"

    @tool(idempotent=True)
    async def lookup() -> str:
        """Read-only; waits until released."""
        runs.append("lookup")
        started.set()
        await release.wait()
        return "looked up"

    @tool
    async def pay() -> str:
        """Has effects; waits until released."""
        runs.append("pay")
        await release.wait()
        return "paid"

    calls = AssistantMessage(
        tool_calls=(ToolCall("1", "quick", "{}"), ToolCall("2", "lookup", "{}"),
                    ToolCall("3", "pay", "{}"))
    )  # fmt: skip
    store = RunStore(tmp_path / "log.db")
    first = Agent(ScriptedModel([calls]), tools=[quick, lookup, pay], store=store)
    task = asyncio.create_task(first.run("go"))
    await started.wait()
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (run,) = store.runs()
    assert run.status == "interrupted"

    release.set()
    seen: list[tuple[ToolResult, ...]] = []

    def answer(messages: object, tools: object) -> AssistantMessage:
        assert isinstance(messages, tuple)
        seen.append(tuple(m for m in messages if isinstance(m, ToolResult)))
        assert calls_answered(messages)
        return AssistantMessage("all settled")

    second = Agent(FunctionModel(answer), tools=[quick, lookup, pay], store=store)
    result = await second.resume(run.id)
    assert result.output == "all settled"
    # An orderly stop (cancellation, Ctrl-C) leaves the calls in flight open in the log: the
    # idempotent one runs again, the other is answered "interrupted", the finished one is kept.
    assert runs == ["quick", "lookup", "pay", "lookup"]
    results = {r.name: r for r in seen[0]}
    assert [r.name for r in seen[0]] == ["quick", "lookup", "pay"]
    assert results["quick"].content == "quick ok"
    assert results["lookup"].content == "looked up"
    assert results["pay"].content.startswith("interrupted")
    assert store.run(run.id).status == "answered"
    assert result.run_id == run.id


def test_resume_needs_a_log() -> None:
    with pytest.raises(ConfigError, match="needs a run log"):
        asyncio.run(Agent(ScriptedModel([])).resume("x"))


def test_answered_runs_cannot_be_resumed(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "log.db")
    run_id = Agent(ScriptedModel(["hi"]), store=store).run_sync("go").run_id
    assert run_id is not None
    with pytest.raises(ConfigError, match="cannot be resumed"):
        asyncio.run(Agent(ScriptedModel([]), store=store).resume(run_id))


def test_resume_of_a_killed_run_settles_unfinished_calls(tmp_path: Path) -> None:
    """Simulates a log cut off mid-dispatch (as after SIGKILL): the reply with its calls and one
    finished call are logged, their results are not in the transcript yet."""
    runs: list[str] = []

    @tool
    def fast() -> str:
        """Fast."""
        runs.append("fast")
        return "fast ok"

    @tool(idempotent=True)
    def read() -> str:
        """Read-only."""
        runs.append("read")
        return "read ok"

    @tool
    def write() -> str:
        """Writes."""
        runs.append("write")
        return "written"

    store = RunStore(tmp_path / "log.db")
    run_id = store.start_run(model="scripted", prompt="go", history=(), config={})
    record = store.recorder(run_id)
    from steadyloop.events import MessageAdded, ModelRequestStarted, ToolCallFinished
    from steadyloop.messages import UserMessage

    reply = AssistantMessage(
        tool_calls=(ToolCall("1", "fast", "{}"), ToolCall("2", "read", "{}"),
                    ToolCall("3", "write", "{}"))
    )  # fmt: skip
    record(MessageAdded(0, UserMessage("go")))
    record(ModelRequestStarted(1, 10, 100, 1))
    record(MessageAdded(1, reply))
    record(ToolCallFinished(reply.tool_calls[0], ToolResult("1", "fast", "fast ok"), "fast ok",
                            0.01, 1))  # fmt: skip
    store.release(run_id)  # as the operating system does when the process dies

    agent = Agent(ScriptedModel(["done"]), tools=[fast, read, write], store=store)
    result = asyncio.run(agent.resume(run_id))
    assert runs == ["read"]
    contents = [m.content for m in result.messages if isinstance(m, ToolResult)]
    assert contents[0] == "fast ok"
    assert contents[1] == "read ok"
    assert contents[2].startswith("interrupted: the run stopped while this call was running")
    assert calls_answered(result.messages)
    assert result.usage.requests == 2
