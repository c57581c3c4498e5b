"""A run cancelled while its claim is being taken keeps nothing: its id is free again, its
session takes the next run, and a resume cancelled that way can be sent again. On a real
Postgres, whose claims are taken in a worker thread that a cancel cannot stop; the random
cancels and a run of the caller's id being logged run on SQLite too."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from steadyloop import Agent, Approve, AssistantMessage, ToolCall, tool
from steadyloop.sessions import lock_id
from steadyloop.store import open_store
from steadyloop.store.postgres import PostgresStore
from steadyloop.store.sqlite import SQLiteStore
from steadyloop.testing import FunctionModel, ScriptedModel
from support import postgres

# A run that should start at once but does not is waiting for a claim nobody will release.
STARTS_WITHIN = 20.0


class ClaimHeldUp(PostgresStore):
    """A Postgres run log whose claim of `key` waits, in its worker thread, until the test has
    cancelled the task taking it: the claim is then taken in the very instant after the cancel."""

    def __init__(self, url: str, key: str) -> None:
        super().__init__(url)
        self.key = key
        self.claiming = threading.Event()
        self.cancelled = threading.Event()

    def claim(self, run_id: str) -> None:
        if run_id == self.key and not self.cancelled.is_set():
            self.claiming.set()
            assert self.cancelled.wait(STARTS_WITHIN)
        super().claim(run_id)


async def cancel_at_the_claim(log: ClaimHeldUp, task: asyncio.Task[Any]) -> None:
    """Cancels `task` while `log` takes its held-up claim, and waits for it to end."""
    assert await asyncio.to_thread(log.claiming.wait, STARTS_WITHIN)
    task.cancel()
    log.cancelled.set()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()


def answer(messages: Any, tools: Any) -> AssistantMessage:
    return AssistantMessage(f"answer {len(messages)}")


def test_a_run_cancelled_while_claiming_its_session_leaves_the_session_free(
    postgres_server: Any,
) -> None:
    log = ClaimHeldUp(postgres.new_database(postgres_server), lock_id("s"))
    agent = Agent(FunctionModel(answer), store=log)

    async def main() -> None:
        await cancel_at_the_claim(log, asyncio.create_task(agent.run("first", session="s")))
        after = await asyncio.wait_for(agent.run("second", session="s"), STARTS_WITHIN)
        assert after.output == "answer 1"

    asyncio.run(main())
    assert [r.prompt for r in log.session("s")] == ["second"]
    log.close()


@tool(approve=True)
def refund(order: str) -> str:
    """Refunds an order."""
    return f"refunded {order}"


def test_a_resume_cancelled_while_claiming_its_run_can_be_sent_again(
    postgres_server: Any,
) -> None:
    url = postgres.new_database(postgres_server)
    model = ScriptedModel(
        [AssistantMessage(tool_calls=(ToolCall("c1", "refund", '{"order": "A1"}'),)), "Refunded."]
    )
    paused = Agent(model, tools=[refund], store=url).run_sync("Refund A1")
    assert paused.stop_reason == "approval"
    log = ClaimHeldUp(url, str(paused.run_id))
    agent = Agent(model, tools=[refund], store=log)
    decisions = {"c1": Approve()}

    async def main() -> None:
        resuming = asyncio.create_task(agent.resume(str(paused.run_id), decisions=decisions))
        await cancel_at_the_claim(log, resuming)
        done = await agent.resume(str(paused.run_id), decisions=decisions)
        assert done.output == "Refunded."

    asyncio.run(main())
    log.close()


def test_runs_of_a_session_cancelled_at_any_point_never_block_it(store_url: str) -> None:
    log = open_store(store_url)
    agent = Agent(FunctionModel(answer), store=log)

    async def main() -> None:
        for passes in range(40):
            task = asyncio.create_task(agent.run("cancelled", session="s"))
            for _ in range(passes):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await asyncio.wait_for(agent.run("last", session="s"), STARTS_WITHIN)

    asyncio.run(main())
    assert log.session("s")[-1].status == "answered"
    log.close()


def test_a_run_cancelled_while_it_is_being_logged_leaves_its_id_free(tmp_path: Any) -> None:
    class StartHeldUp(SQLiteStore):
        """Logs a run of the caller's id only once the test has cancelled the task."""

        claiming = threading.Event()
        cancelled = threading.Event()

        def start_run(self, **fields: Any) -> str:
            self.claiming.set()
            assert self.cancelled.wait(STARTS_WITHIN)
            return super().start_run(**fields)

    log = StartHeldUp(tmp_path / "runs.db")
    agent = Agent(FunctionModel(answer), store=log)

    async def main() -> None:
        task = asyncio.create_task(agent.run("first", run_id="r1"))
        assert await asyncio.to_thread(log.claiming.wait, STARTS_WITHIN)
        task.cancel()
        log.cancelled.set()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled()
        again = await asyncio.wait_for(
            agent.run("first", run_id="r1", if_exists="resume"), STARTS_WITHIN
        )
        assert again.output == "answer 1"

    asyncio.run(main())
    info = log.find("r1")
    assert info is not None
    assert info.status == "answered"
    log.close()
