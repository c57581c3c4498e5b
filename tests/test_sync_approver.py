"""A sync approver: the questions of one turn go to a worker thread together and are asked one at
a time, in call order, each answer going to its own call; a cancelled call's question is never
asked; an approver that raises stops the run with its exception."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable
from typing import Any

import pytest

from steadyloop import (
    Agent,
    Approve,
    AssistantMessage,
    Defer,
    Deny,
    Edit,
    PendingCall,
    RunContext,
    ToolCall,
    ToolResult,
    tool,
)
from steadyloop.approvals import Decision
from steadyloop.events import CallDecided, Event
from steadyloop.testing import ScriptedModel

WAIT = 10  # seconds a test waits for something that happens at once when all is well


def refund(call_id: str, amount: float = 30) -> ToolCall:
    return ToolCall(call_id, "issue_refund", json.dumps({"order_id": call_id, "amount": amount}))


def shop(refunds: list[str], on_refund: Any = None) -> list[Any]:
    @tool(approve=True)
    async def issue_refund(order_id: str, amount: float) -> str:
        """Refunds an order."""
        if on_refund is not None:
            on_refund(order_id)
        refunds.append(f"{order_id}:{amount:g}")
        return f"refunded {amount:g} on {order_id}"

    @tool
    def lookup_order(order_id: str) -> str:
        """The order's status."""
        return f"{order_id}: delivered"

    return [issue_refund, lookup_order]


def answers(messages: Any) -> dict[str, str]:
    return {m.call_id: m.content for m in messages if isinstance(m, ToolResult)}


async def test_a_turns_questions_are_asked_in_call_order_without_waiting_for_the_loop() -> None:
    asked: list[tuple[int, str]] = []
    all_asked = threading.Event()
    waited: list[bool] = []

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        asked.append((ctx.turn, call.call_id))
        if call.call_id == "r3":
            all_asked.set()
        return Approve()

    def on_refund(order_id: str) -> None:
        # The first approved call holds the event loop until the turn's last question is
        # asked: the thread asks the next questions on its own, not one loop trip each.
        if order_id == "r1":
            waited.append(all_asked.wait(WAIT))

    calls = (refund("r1"), ToolCall("l1", "lookup_order", '{"order_id": "x"}'), refund("r2"))
    model = ScriptedModel([
        AssistantMessage(tool_calls=(*calls, refund("r3"))),
        AssistantMessage(tool_calls=(refund("r4"), refund("r5"))),
        "done",
    ])  # fmt: skip
    refunds: list[str] = []
    result = await Agent(model, tools=shop(refunds, on_refund), approver=approver).run("go")
    assert waited == [True]
    assert asked == [(1, "r1"), (1, "r2"), (1, "r3"), (2, "r4"), (2, "r5")]
    assert refunds == ["r1:30", "r2:30", "r3:30", "r4:30", "r5:30"]
    assert result.output == "done"


async def test_a_call_decided_early_runs_while_the_next_question_is_being_decided() -> None:
    first_ran = threading.Event()
    seen: list[bool] = []

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        if call.call_id == "r2":  # a person who answers once the first refund is done
            seen.append(first_ran.wait(WAIT))
        return Approve()

    def on_refund(order_id: str) -> None:
        if order_id == "r1":
            first_ran.set()

    model = ScriptedModel([AssistantMessage(tool_calls=(refund("r1"), refund("r2"))), "done"])
    refunds: list[str] = []
    await Agent(model, tools=shop(refunds, on_refund), approver=approver).run("go")
    assert seen == [True]
    assert refunds == ["r1:30", "r2:30"]


async def test_each_call_gets_its_own_decision() -> None:
    decisions: dict[str, Decision] = {
        "r1": Approve(),
        "r2": Deny("not this one"),
        "r3": Edit({"order_id": "r3", "amount": 5}),
        "r4": Defer(),
    }
    threads: set[int] = set()

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        threads.add(threading.get_ident())
        return decisions[call.call_id]

    events: list[Event] = []
    model = ScriptedModel([AssistantMessage(tool_calls=tuple(map(refund, decisions))), "done"])
    refunds: list[str] = []
    agent = Agent(model, tools=shop(refunds), approver=approver)
    paused = await agent.run("go", on_event=events.append)
    assert len(threads) == 1  # the turn's four questions, asked in one worker thread
    assert threading.get_ident() not in threads
    assert refunds == ["r1:30", "r3:5"]
    assert [p.call_id for p in paused.pending] == ["r4"]
    decided = [(e.call.id, e.decision) for e in events if isinstance(e, CallDecided)]
    assert decided == [("r1", "approved"), ("r2", "denied"), ("r3", "edited"), ("r4", "deferred")]
    done = await agent.resume(paused, decisions={"r4": Approve()})
    got = answers(done.messages)
    assert got["r1"] == "refunded 30 on r1"
    assert got["r2"] == "denied by the reviewer: not this one"
    assert got["r3"].endswith("refunded 5 on r3")
    assert got["r4"] == "refunded 30 on r4"


def test_a_cancelled_runs_remaining_questions_are_never_asked() -> None:
    asked: list[str] = []
    asking, release = threading.Event(), threading.Event()

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        asked.append(call.call_id)
        asking.set()
        release.wait(WAIT)  # a person still thinking when the run is cancelled
        return Approve()

    refunds: list[str] = []
    model = ScriptedModel([AssistantMessage(tool_calls=(refund("r1"), refund("r2"), refund("r3")))])
    agent = Agent(model, tools=shop(refunds), approver=approver)

    async def main() -> None:
        run = asyncio.ensure_future(agent.run("go"))
        assert await asyncio.to_thread(asking.wait, WAIT)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        release.set()  # the first answer comes after the run was cancelled

    asyncio.run(main())  # returns once the worker thread is done
    assert asked == ["r1"]
    assert refunds == []


async def test_an_approver_that_raises_stops_the_run_and_the_questions_after_it_are_not_asked() -> (
    None
):
    asked: list[str] = []

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        asked.append(call.call_id)
        if call.call_id == "r2":
            raise RuntimeError("the review service is down")
        return Approve()

    model = ScriptedModel([AssistantMessage(tool_calls=(refund("r1"), refund("r2"), refund("r3")))])
    refunds: list[str] = []
    agent = Agent(model, tools=shop(refunds), approver=approver)
    with pytest.raises(RuntimeError, match="the review service is down"):
        await agent.run("go")
    assert asked == ["r1", "r2"]
    assert "r3:30" not in refunds


async def test_an_awaitable_from_a_sync_approver_is_awaited_before_the_next_question() -> None:
    seen: list[str] = []

    async def later(call_id: str) -> Decision:
        await asyncio.sleep(0)
        seen.append(f"decided {call_id}")
        return Approve()

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision | Awaitable[Decision]:
        seen.append(f"asked {call.call_id}")
        return later(call.call_id) if call.call_id == "r1" else Deny("no")

    model = ScriptedModel([AssistantMessage(tool_calls=(refund("r1"), refund("r2"))), "done"])
    refunds: list[str] = []
    result = await Agent(model, tools=shop(refunds), approver=approver).run("go")
    assert seen == ["asked r1", "decided r1", "asked r2"]
    assert refunds == ["r1:30"]
    assert answers(result.messages)["r2"] == "denied by the reviewer: no"


async def test_an_async_approver_is_asked_on_the_event_loop() -> None:
    threads: list[int] = []

    async def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        threads.append(threading.get_ident())
        return Approve()

    model = ScriptedModel([AssistantMessage(tool_calls=(refund("r1"), refund("r2"))), "done"])
    refunds: list[str] = []
    await Agent(model, tools=shop(refunds), approver=approver).run("go")
    assert threads == [threading.get_ident()] * 2
    assert refunds == ["r1:30", "r2:30"]
