"""Rows a run records on the event loop reach the file within moments even when the run does
not commit them itself (a `durability="batch"` run waiting on its model): the writer commits
what is still queued once its gathering time is up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

from steadyloop import Agent, Approve, AssistantMessage, ToolCall, ToolResult, UserMessage, tool
from steadyloop.messages import Message
from steadyloop.store import SQLiteStore
from steadyloop.testing import FunctionModel
from steadyloop.transcript import calls_answered


async def test_a_batch_run_waiting_on_its_model_is_in_the_file_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    asked, answer = asyncio.Event(), asyncio.Event()

    async def reply(messages: Sequence[Message], tools: object) -> AssistantMessage:
        asked.set()
        await answer.wait()
        return AssistantMessage("done")

    agent = Agent(FunctionModel(reply), store=store, durability="batch")
    run = asyncio.create_task(agent.run("hello"))
    await asked.wait()
    # Another connection sees only what is committed: the run and its prompt, while it waits.
    reader = SQLiteStore(path, read_only=True)
    try:
        for _ in range(500):
            found = reader.runs(5)
            if found:
                break
            await asyncio.sleep(0.01)
        (info,) = found
        assert info.status == "running"
        assert reader.messages(info.id) == (UserMessage("hello"),)
    finally:
        answer.set()
        assert (await run).output == "done"
        reader.close()
        store.close()


async def test_batch_runs_on_an_event_loop_commit_there_and_leave_the_writer_thread_asleep(
    tmp_path: Path,
) -> None:
    """Waking a thread slows the event loop's thread for a while after (on two cores, up to
    half again as slow): rows a run records on the loop are committed there, by the run or,
    once they have waited the gathering time, by the loop's timer."""
    store = SQLiteStore(tmp_path / "runs.db")
    committed_in: set[str] = set()
    backend = store._backend
    commit = backend.commit

    def commit_noting_the_thread() -> None:
        committed_in.add(threading.current_thread().name)
        commit()

    backend.commit = commit_noting_the_thread  # type: ignore[method-assign]

    async def reply(messages: Sequence[Message], tools: object) -> AssistantMessage:
        await asyncio.sleep(0.005)  # past the gathering time: the timer commits the rows
        return AssistantMessage("done")

    agent = Agent(FunctionModel(reply), store=store, durability="batch")
    try:
        for _ in range(5):
            assert (await agent.run("hello")).output == "done"
        assert committed_in == {threading.current_thread().name}
        assert len(store.runs(10)) == 5
    finally:
        store.close()


async def test_a_batch_run_paused_for_approval_goes_on_from_the_log_in_a_new_store(
    tmp_path: Path,
) -> None:
    """The rows the loop's timer committed while the model took its time, and those the run's
    end committed, are the whole run: a new store resumes it from them and runs the approved
    call once."""
    path = tmp_path / "runs.db"
    refunded: list[str] = []

    @tool(approve=True)
    def refund(order: str) -> str:
        """Refunds an order."""
        refunded.append(order)
        return f"refunded {order}"

    async def reply(messages: Sequence[Message], tools: object) -> AssistantMessage:
        await asyncio.sleep(0.005)  # past the gathering time: the timer commits the rows
        if any(isinstance(m, ToolResult) and not m.is_error for m in messages):
            return AssistantMessage("done")
        call = ToolCall("c1", "refund", '{"order": "A-1"}')
        return AssistantMessage(tool_calls=(call,), stop_reason="tool_use")

    def agent(store: SQLiteStore) -> Agent:
        return Agent(FunctionModel(reply), tools=[refund], store=store, durability="batch")

    first = SQLiteStore(path)
    paused = await agent(first).run("refund A-1")
    first.close()
    assert paused.stop_reason == "approval"
    assert refunded == []

    second = SQLiteStore(path)
    try:
        assert paused.run_id is not None
        result = await agent(second).resume(paused.run_id, decisions={"c1": Approve()})
        assert result.output == "done"
        assert refunded == ["A-1"]
        assert calls_answered(result.messages)
        assert second.messages(paused.run_id) == result.messages
    finally:
        second.close()
