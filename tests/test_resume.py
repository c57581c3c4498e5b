"""Resuming a logged run in-process: finished calls kept, unfinished ones settled safely."""

from __future__ import annotations

import asyncio
import datetime
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from steadyloop import Agent, Approve, AssistantMessage, ToolCall, ToolResult, Usage, tool
from steadyloop.agent import IfExists
from steadyloop.errors import ConfigError, ModelError
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel, ScriptedModel, TestModel
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


class Refund(BaseModel):
    order_id: str
    amount: float
    when: datetime.date


@pytest.mark.parametrize("if_exists", ["return", "resume"])
@pytest.mark.parametrize("on", ["agent", "run"])
def test_a_finished_typed_run_returns_its_answer_as_the_type_from_the_log(
    tmp_path: Path, if_exists: IfExists, on: str
) -> None:
    """The answer type given to the agent, or to the run, validates the logged JSON again."""
    agent = Agent(TestModel(), output=Refund if on == "agent" else None, store=tmp_path / "l.db")
    per_run = Refund if on == "run" else None
    first = agent.run_sync("Refund A1", run_id="r1", output=per_run)
    again = agent.run_sync("Refund A1", run_id="r1", if_exists=if_exists, output=per_run)
    agent.close_store()
    assert isinstance(first.output, Refund)
    assert isinstance(again.output, Refund)
    assert again.output == first.output
    assert again.usage == first.usage


def test_a_logged_answer_that_does_not_fit_the_type_asked_for_is_refused(tmp_path: Path) -> None:
    agent = Agent(TestModel(), output=Refund, store=tmp_path / "l.db")
    agent.run_sync("Refund A1", run_id="r1")
    with pytest.raises(ConfigError, match="logged answer of run r1 is not a valid int"):
        agent.run_sync("Refund A1", run_id="r1", if_exists="return", output=int)
    agent.close_store()


@tool(approve=True)
def wire_money(amount: int) -> str:
    """Wires money."""
    return f"wired {amount} EUR"


def test_resuming_a_paused_run_from_the_log_keeps_unknown_token_counts_unknown(
    tmp_path: Path,
) -> None:
    """TestModel reports no token counts: both model calls stay unreported after a resume from
    the log, as after a resume of the result in hand."""
    agent = Agent(TestModel(), tools=[wire_money], store=tmp_path / "l.db")
    paused = agent.run_sync("Pay 1 EUR", run_id="p1")
    assert paused.stop_reason == "approval"
    decisions = {paused.pending[0]: Approve()}
    from_log = asyncio.run(agent.resume("p1", decisions=decisions))
    in_hand = asyncio.run(
        Agent(TestModel(), tools=[wire_money]).resume(paused, decisions=decisions)
    )
    agent.close_store()
    assert from_log.usage.unreported == 2
    assert from_log.usage.total_tokens is None
    assert from_log.usage == in_hand.usage


def lookup_call(call_id: str, order_id: str) -> ToolCall:
    return ToolCall(call_id, "lookup", json.dumps({"order_id": order_id}))


def test_resuming_a_failed_run_keeps_the_cached_and_unreported_tokens_of_its_replies(
    tmp_path: Path,
) -> None:
    @tool
    def lookup(order_id: str) -> str:
        """The order's status."""
        return "shipped"

    counted = Usage(
        input_tokens=1_000, output_tokens=20, cache_read_tokens=800, cache_write_tokens=100
    )
    first = ScriptedModel(
        [
            AssistantMessage(tool_calls=(lookup_call("c1", "A1"),), usage=counted),
            AssistantMessage(tool_calls=(lookup_call("c2", "A2"),)),
            ModelError("the API key was revoked"),
        ]
    )
    store = RunStore(tmp_path / "l.db")
    with pytest.raises(ModelError):
        Agent(first, tools=[lookup], store=store).run_sync("Where are A1 and A2?", run_id="f1")
    result = asyncio.run(Agent(ScriptedModel(["Both shipped."]), store=store).resume("f1"))
    assert result.usage.requests == 3
    assert result.usage.tool_calls == 2
    assert (result.usage.input_tokens, result.usage.output_tokens) == (1_000, 20)
    assert (result.usage.cache_read_tokens, result.usage.cache_write_tokens) == (800, 100)
    assert result.usage.unreported == 2  # the second reply and the answer came without counts
    assert store.run("f1").usage == result.usage
