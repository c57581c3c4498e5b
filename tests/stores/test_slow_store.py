"""A run waiting on its run log never holds up the other runs of its event loop: while another
connection keeps the log locked, a run that resumes, or that ends in an error, waits for its
rows off the loop, and a run beside it goes on and finishes first."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Awaitable, Sequence
from typing import Any

import pytest

from steadyloop import Agent, AssistantMessage, Limits, ToolCall, tool
from steadyloop.errors import ModelError
from steadyloop.messages import Message
from steadyloop.store import RunLog
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.tools import ToolSpec

TURNS = 40
# At most this long another connection keeps the log locked (less once the other run is done).
HOLD_SECONDS = 3.0


@tool
async def step(number: int) -> str:
    """Takes a moment."""
    await asyncio.sleep(0.005)
    return f"step {number} done"


def busy_agent() -> Agent[str]:
    """Many short turns, with no run log."""

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        if len(messages) >= 2 * TURNS:
            return AssistantMessage("done")
        call = ToolCall(f"c{len(messages)}", "step", f'{{"number": {len(messages)}}}')
        return AssistantMessage(tool_calls=(call,))

    return Agent(FunctionModel(reply), tools=[step], limits=Limits(max_turns=TURNS + 1))


class HeldLock:
    """Another connection locking the log's tables against writes, on a thread of its own,
    until the busy run is done (or `HOLD_SECONDS` pass); `order` says which came first."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.order: list[str] = []
        self.busy_run_done = threading.Event()
        self._held = threading.Event()
        self._thread = threading.Thread(target=self._hold)

    def __enter__(self) -> HeldLock:
        self._thread.start()
        self._held.wait()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.busy_run_done.set()
        self._thread.join()

    def _hold(self) -> None:
        if self.url.startswith("postgresql://"):
            import psycopg

            with psycopg.connect(self.url) as conn:
                conn.execute("LOCK TABLE runs, events IN EXCLUSIVE MODE")  # reads go on
                self._wait_for_busy_run()
                conn.rollback()
        else:
            db = sqlite3.connect(self.url, isolation_level=None)
            db.execute("BEGIN IMMEDIATE")
            self._wait_for_busy_run()
            db.execute("ROLLBACK")
            db.close()
        self.order.append("lock released")

    def _wait_for_busy_run(self) -> None:
        self._held.set()
        self.busy_run_done.wait(HOLD_SECONDS)

    async def beside_busy_run(self, logged: Awaitable[Any]) -> Any:
        """Awaits `logged` (its result, or the exception it raised) and a run of many short
        turns on this loop together."""

        async def outcome() -> Any:
            try:
                return await logged
            except Exception as exc:
                return exc

        async def busy() -> None:
            await busy_agent().run("work")
            self.order.append("busy run finished")
            self.busy_run_done.set()

        result, _ = await asyncio.gather(outcome(), busy())
        return result


async def test_a_run_resuming_from_a_locked_log_holds_up_no_other_run(
    store: RunLog, store_url: str
) -> None:
    with pytest.raises(ModelError):
        await Agent(ScriptedModel([ModelError("down")]), store=store).run("go")
    (failed,) = store.runs()
    with HeldLock(store_url) as lock:
        agent = Agent(ScriptedModel(["back"]), store=store)
        resumed = await lock.beside_busy_run(agent.resume(failed.id))
    assert lock.order == ["busy run finished", "lock released"]
    assert resumed.output == "back"
    assert store.run(failed.id).status == "answered"


async def test_a_run_failing_against_a_locked_log_holds_up_no_other_run(
    store: RunLog, store_url: str
) -> None:
    with HeldLock(store_url) as lock:
        # "batch": nothing waits for the run's rows before its end is marked.
        agent = Agent(ScriptedModel([ModelError("down")]), store=store, durability="batch")
        error = await lock.beside_busy_run(agent.run("go"))
    assert lock.order == ["busy run finished", "lock released"]
    assert isinstance(error, ModelError)
    (run,) = store.runs()
    assert (run.status, run.error) == ("error", "ModelError: down")
