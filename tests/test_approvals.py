"""Human approval: gated calls are decided after validation and before their body runs; a run
with undecided calls pauses and `resume` continues it, from the result or from the run log."""

from __future__ import annotations

import asyncio
import json
import pickle
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, field_validator

from steadyloop import (
    Agent,
    Approve,
    AssistantMessage,
    ConfigError,
    Defer,
    Deny,
    Edit,
    Message,
    PendingCall,
    RunContext,
    RunResult,
    ToolCall,
    ToolResult,
    tool,
)
from steadyloop.approvals import WAITING_TEXT, Decision, _OneAtATime
from steadyloop.events import CallDecided, Event, RunFinished, ToolCallFinished
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.tools import ToolSpec
from steadyloop.transcript import calls_answered

HERE = Path(__file__).resolve().parent


class Shop:
    def __init__(self) -> None:
        self.refunds: list[tuple[str, float]] = []
        self.lookups: list[str] = []


def shop_tools(shop: Shop, gate: Any = True) -> list[Any]:
    @tool(approve=gate)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refunds an order."""
        shop.refunds.append((order_id, amount))
        return f"refunded {amount:g} on {order_id}"

    @tool
    def lookup_order(order_id: str) -> str:
        """The order's status."""
        shop.lookups.append(order_id)
        return f"{order_id}: delivered"

    return [issue_refund, lookup_order]


def refund(call_id: str, order_id: str = "A1", amount: float = 30) -> ToolCall:
    return ToolCall(call_id, "issue_refund", json.dumps({"order_id": order_id, "amount": amount}))


def lookup(call_id: str, order_id: str = "A1") -> ToolCall:
    return ToolCall(call_id, "lookup_order", json.dumps({"order_id": order_id}))


def reply(*calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(tool_calls=calls)


def results(messages: Sequence[Message]) -> list[tuple[str, str]]:
    return [(m.call_id, m.content) for m in messages if isinstance(m, ToolResult)]


async def test_a_gated_call_pauses_the_run_and_resume_runs_it_once() -> None:
    shop = Shop()
    model = ScriptedModel([reply(refund("r1"), lookup("l1")), "Refunded A1."])
    agent = Agent(model, tools=shop_tools(shop))
    paused = await agent.run("Refund A1")
    assert paused.stop_reason == "approval"
    assert paused.pending == (PendingCall("r1", "issue_refund", {"order_id": "A1", "amount": 30}),)
    assert shop.refunds == []
    assert shop.lookups == ["A1"]  # the ungated sibling ran at once
    # the transcript ends with the turn's answers in call order: what ran, and the waiting call
    assert paused.messages[-3] == reply(refund("r1"), lookup("l1"))
    assert results(paused.messages) == [("r1", WAITING_TEXT), ("l1", "A1: delivered")]
    assert calls_answered(paused.messages)
    assert len(model.requests) == 1

    done = await agent.resume(paused, decisions={"r1": Approve()})
    assert done.output == "Refunded A1."
    assert shop.refunds == [("A1", 30)]
    assert shop.lookups == ["A1"]  # not run again
    assert results(done.messages) == [("r1", "refunded 30 on A1"), ("l1", "A1: delivered")]
    assert calls_answered(done.messages)
    assert done.pending == ()


async def test_deny_answers_with_the_reason_and_never_runs_the_body() -> None:
    shop = Shop()
    agent = Agent(ScriptedModel([reply(refund("r1")), "OK."]), tools=shop_tools(shop))
    paused = await agent.run("Refund A1")
    done = await agent.resume(paused, decisions={"r1": Deny("refunds need a receipt")})
    assert shop.refunds == []
    (result,) = [m for m in done.messages if isinstance(m, ToolResult)]
    assert result.is_error
    assert result.content == "denied by the reviewer: refunds need a receipt"


async def test_edit_runs_the_edited_arguments_and_says_so() -> None:
    shop = Shop()
    agent = Agent(ScriptedModel([reply(refund("r1", amount=500)), "OK."]), tools=shop_tools(shop))
    paused = await agent.run("Refund A1")
    done = await agent.resume(paused, decisions={"r1": Edit({"order_id": "A1", "amount": 50})})
    assert shop.refunds == [("A1", 50)]  # never the original 500
    (result,) = [m for m in done.messages if isinstance(m, ToolResult)]
    assert not result.is_error
    assert result.content.startswith("the reviewer changed the arguments of this call to ")
    assert result.content.endswith("refunded 50 on A1")
    # the model's own call stays in the transcript as it made it
    assert done.messages[1] == reply(refund("r1", amount=500))


async def test_edited_arguments_are_validated_again() -> None:
    shop = Shop()
    agent = Agent(ScriptedModel([reply(refund("r1")), "OK."]), tools=shop_tools(shop))
    paused = await agent.run("Refund A1")
    done = await agent.resume(paused, decisions={"r1": Edit({"order_id": "A1", "amount": "x"})})
    assert shop.refunds == []
    (result,) = [m for m in done.messages if isinstance(m, ToolResult)]
    assert result.is_error
    assert "- amount: Input should be a valid number" in result.content


async def test_an_approve_function_gates_only_the_calls_it_picks() -> None:
    shop = Shop()
    seen: list[dict[str, Any]] = []

    def big(arguments: dict[str, Any]) -> bool:
        seen.append(arguments)
        return bool(arguments["amount"] > 100)

    model = ScriptedModel([reply(refund("small", "A1", 20), refund("big", "B2", 500)), "OK."])
    paused = await Agent(model, tools=shop_tools(shop, gate=big)).run("go")
    assert [p.call_id for p in paused.pending] == ["big"]
    assert shop.refunds == [("A1", 20)]
    # the JSON object the model sent (amount as it was written, not yet a float)
    assert seen == [{"order_id": "A1", "amount": 20}, {"order_id": "B2", "amount": 500}]


async def test_an_approver_decides_in_the_run_with_the_call_and_its_context() -> None:
    shop = Shop()
    asked: list[tuple[PendingCall, RunContext[Any]]] = []

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        asked.append((call, ctx))
        return Approve() if call.arguments["amount"] < 100 else Deny("too much")

    model = ScriptedModel([reply(refund("r1", amount=10), refund("r2", amount=900)), "done"])
    agent = Agent(model, tools=shop_tools(shop), approver=approver)
    result = await agent.run("go", deps="the deps")
    assert result.stop_reason == "end_turn"
    assert shop.refunds == [("A1", 10)]
    assert results(result.messages)[1] == ("r2", "denied by the reviewer: too much")
    call, ctx = asked[0]
    assert call == PendingCall("r1", "issue_refund", {"order_id": "A1", "amount": 10})
    assert (ctx.deps, ctx.call_id, ctx.turn) == ("the deps", "r1", 1)


async def test_an_async_approver_can_defer_some_calls() -> None:
    shop = Shop()

    async def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        await asyncio.sleep(0)
        return Defer() if call.call_id == "r2" else Approve()

    model = ScriptedModel([reply(refund("r1"), refund("r2", "B2"), lookup("l1")), "done"])
    agent = Agent(model, tools=shop_tools(shop), approver=approver)
    paused = await agent.run("go")
    assert [p.call_id for p in paused.pending] == ["r2"]
    assert shop.refunds == [("A1", 30)]  # approved at once, ran at once
    done = await agent.resume(paused, decisions={"r2": Approve()})
    assert shop.refunds == [("A1", 30), ("B2", 30)]
    assert [call_id for call_id, _ in results(done.messages)] == ["r1", "r2", "l1"]


async def test_an_async_approver_is_asked_one_call_at_a_time_in_call_order() -> None:
    shop = Shop()
    seen: list[str] = []

    async def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        seen.append(f"asked {call.call_id}")
        for _ in range(3 if call.call_id == "r1" else 1):
            await asyncio.sleep(0)  # a person taking their time: the loop runs the other calls
        seen.append(f"decided {call.call_id}")
        return Deny("no") if call.call_id == "r2" else Approve()

    calls = (refund("r1"), refund("r2", "B2"), lookup("l1"), refund("r3", "C3"))
    model = ScriptedModel([reply(*calls), "done"])
    result = await Agent(model, tools=shop_tools(shop), approver=approver).run("go")
    assert seen == ["asked r1", "decided r1", "asked r2", "decided r2", "asked r3", "decided r3"]
    assert shop.refunds == [("A1", 30), ("C3", 30)]
    assert shop.lookups == ["A1"]
    assert [call_id for call_id, _ in results(result.messages)] == ["r1", "r2", "l1", "r3"]


async def test_a_run_cancelled_while_its_async_approver_decides_asks_nothing_more() -> None:
    shop = Shop()
    asked: list[str] = []
    deciding = asyncio.Event()

    async def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        asked.append(call.call_id)
        deciding.set()
        await asyncio.sleep(60)  # a person still thinking when the run is cancelled
        return Approve()

    model = ScriptedModel([reply(refund("r1"), refund("r2", "B2"), refund("r3", "C3"))])
    agent = Agent(model, tools=shop_tools(shop), approver=approver)
    run = asyncio.ensure_future(agent.run("go"))
    await asyncio.wait_for(deciding.wait(), 10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, 10)  # the calls waiting their turn do not hold it up
    assert asked == ["r1"]
    assert shop.refunds == []


async def test_a_question_cancelled_while_waiting_its_turn_keeps_no_other_waiting() -> None:
    gate = _OneAtATime()
    asked: list[str] = []

    async def question(name: str) -> None:
        if (turn := gate.take()) is not None:
            await turn
        try:
            asked.append(name)
        finally:
            gate.next()

    gate.take()  # a question has the turn, and is being answered
    second, third = (asyncio.create_task(question(name)) for name in ("second", "third"))
    await asyncio.sleep(0)  # both wait their turn
    second.cancel()  # while waiting
    gate.next()  # the open question is answered: the turn skips the cancelled one
    third.cancel()  # handed the turn, cancelled before it could take it: it passes it on
    fourth = asyncio.create_task(question("fourth"))
    await asyncio.wait_for(asyncio.gather(second, third, return_exceptions=True), 10)
    await asyncio.wait_for(fourth, 10)
    assert second.cancelled()
    assert third.cancelled()
    assert asked == ["fourth"]
    assert not gate.open


async def test_what_an_approver_is_given_cannot_be_changed_and_compares_by_value() -> None:
    given: list[tuple[PendingCall, RunContext[Any]]] = []

    async def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        given.append((call, ctx))
        return Approve()

    model = ScriptedModel([reply(refund("r1")), "done"])
    await Agent(model, tools=shop_tools(Shop()), approver=approver).run("go", deps="the deps")
    ((call, ctx),) = given
    with pytest.raises(AttributeError):
        call.call_id = "r2"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ctx.turn = 2  # type: ignore[misc]
    assert call == PendingCall("r1", "issue_refund", {"order_id": "A1", "amount": 30})
    assert hash(call) == hash(PendingCall("r1", "issue_refund", {"amount": 30, "order_id": "A1"}))
    assert pickle.loads(pickle.dumps(call)) == call
    assert ctx == RunContext("the deps", None, 1, "r1", ctx.usage, ctx.messages)
    assert (ctx.usage.requests, len(ctx.messages)) == (1, 2)


async def test_approval_waits_outside_the_tools_timeout() -> None:
    ran: list[str] = []

    @tool(approve=True, timeout=0.05)
    async def send_email(to: str) -> str:
        """Sends an email."""
        ran.append(to)
        return "sent"

    async def slow_reviewer(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        await asyncio.sleep(0.2)  # a person thinking: longer than the tool may take
        return Approve()

    call = ToolCall("e1", "send_email", '{"to": "ada@example.com"}')
    agent = Agent(ScriptedModel([reply(call), "sent"]), tools=[send_email], approver=slow_reviewer)
    result = await agent.run("email Ada")
    assert results(result.messages) == [("e1", "sent")]
    assert ran == ["ada@example.com"]


async def test_invalid_arguments_are_answered_without_asking() -> None:
    asked: list[PendingCall] = []

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        asked.append(call)
        return Approve()

    shop = Shop()
    bad = ToolCall("r1", "issue_refund", '{"order_id": "A1", "amount": "lots"}')
    agent = Agent(ScriptedModel([reply(bad), "ok"]), tools=shop_tools(shop), approver=approver)
    result = await agent.run("go")
    assert asked == []
    assert "invalid arguments for issue_refund" in results(result.messages)[0][1]


checked_addresses: list[str] = []


class Address(BaseModel):
    email: str

    @field_validator("email")
    @classmethod
    def known(cls, email: str) -> str:
        checked_addresses.append(email)  # a lookup a real validator might make
        return email


async def test_a_gated_call_is_validated_once_before_it_is_decided_and_run() -> None:
    checked_addresses.clear()
    sent: list[str] = []

    @tool(approve=True)
    def send(to: Address) -> str:
        """Sends the newsletter."""
        sent.append(to.email)
        return "sent"

    asked: list[PendingCall] = []

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        asked.append(call)
        return Approve()

    call = ToolCall("s1", "send", '{"to": {"email": "ada@example.com"}}')
    agent = Agent(ScriptedModel([reply(call), "done"]), tools=[send], approver=approver)
    result = await agent.run("go")
    assert results(result.messages) == [("s1", "sent")]
    assert asked == [PendingCall("s1", "send", {"to": {"email": "ada@example.com"}})]
    assert sent == ["ada@example.com"]
    assert checked_addresses == ["ada@example.com"]  # once: not for the decision, then to run


def test_an_approver_returning_something_else_is_a_config_error() -> None:
    def yes(call: PendingCall, ctx: RunContext[Any]) -> Any:
        return True

    agent = Agent(ScriptedModel([reply(refund("r1")), "x"]), tools=shop_tools(Shop()), approver=yes)
    with pytest.raises(ConfigError, match=r"return Approve\(\), Deny\(reason\), Edit"):
        agent.run_sync("go")


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        ({}, "no decision for the waiting call(s) r1"),
        ({"r1": Approve(), "zz": Approve()}, "no call 'zz' is waiting for a decision"),
        ({"r1": Defer()}, "resume with Approve(), Deny(reason) or Edit(arguments)"),
        (
            {PendingCall("r1", "issue_refund", {"order_id": "A1", "amount": 31}): Approve()},
            "the decision for call 'r1' was made for issue_refund",
        ),
    ],
)
async def test_missing_stale_or_unusable_decisions_run_nothing(
    decisions: dict[Any, Decision], message: str
) -> None:
    shop = Shop()
    agent = Agent(ScriptedModel([reply(refund("r1")), "x"]), tools=shop_tools(shop))
    paused = await agent.run("go")
    with pytest.raises(ConfigError) as error:
        await agent.resume(paused, decisions=decisions)
    assert message in str(error.value)
    assert "\n" not in str(error.value)
    assert shop.refunds == []
    # the run is still paused: a right decision goes on
    done = await agent.resume(paused, decisions={paused.pending[0]: Approve()})
    assert shop.refunds == [("A1", 30)]
    assert done.stop_reason == "end_turn"


async def test_a_decision_keyed_by_a_pending_call_of_another_run_cannot_approve_this_one() -> None:
    shop = Shop()
    agent = Agent(
        ScriptedModel([reply(refund("r1", "A1", 5)), reply(refund("r1", "B2", 900))]),
        tools=shop_tools(shop),
    )
    first = await agent.run("small refund")
    second = await agent.run("big refund")
    with pytest.raises(ConfigError, match="was made for"):
        await agent.resume(second, decisions={first.pending[0]: Approve()})
    assert shop.refunds == []


async def test_a_result_that_is_not_paused_or_was_resumed_already_runs_nothing() -> None:
    shop = Shop()
    agent = Agent(ScriptedModel(["hi", reply(refund("r1")), "done"]), tools=shop_tools(shop))
    answered = await agent.run("hello")
    with pytest.raises(ConfigError, match="not paused for approval"):
        await agent.resume(answered, decisions={})
    paused = await agent.run("refund")
    await agent.resume(paused, decisions={"r1": Approve()})
    with pytest.raises(ConfigError, match="resumed already"):
        await agent.resume(paused, decisions={"r1": Approve()})
    assert shop.refunds == [("A1", 30)]


async def test_a_logged_pause_resumes_from_another_agent_and_only_once(tmp_path: Path) -> None:
    shop = Shop()
    store = RunStore(tmp_path / "runs.db")
    first = Agent(ScriptedModel([reply(refund("r1"), lookup("l1"))]), tools=shop_tools(shop),
                  store=store)  # fmt: skip
    paused = await first.run("Refund A1")
    assert paused.run_id is not None
    info = store.run(paused.run_id)
    assert (info.status, info.stop_reason) == ("paused", "approval")
    # the sibling's result is in the log at once, and the log reads as the paused result does
    kinds = [e.kind for e in store.events(paused.run_id)]
    assert "tool_finished" in kinds
    assert kinds.count("decision") == 1
    assert store.messages(paused.run_id) == paused.messages
    assert results(paused.messages) == [("r1", WAITING_TEXT), ("l1", "A1: delivered")]

    later = Agent(ScriptedModel(["Refunded."]), tools=shop_tools(shop), store=store)
    with pytest.raises(ConfigError, match=r"is waiting for decisions on r1 \(issue_refund\)"):
        await later.resume(paused.run_id)
    done = await later.resume(paused.run_id, decisions={"r1": Approve()})
    assert done.output == "Refunded."
    assert results(done.messages) == [("r1", "refunded 30 on A1"), ("l1", "A1: delivered")]
    assert shop.refunds == [("A1", 30)]
    assert shop.lookups == ["A1"]
    assert store.messages(paused.run_id) == done.messages
    decided = [e.data["decision"] for e in store.events(paused.run_id) if e.kind == "decision"]
    assert decided == ["deferred", "approved"]
    with pytest.raises(ConfigError, match="is not waiting for approval"):
        await later.resume(paused.run_id, decisions={"r1": Approve()})
    # a paused result in hand resumes through the log when the agent has one
    assert shop.refunds == [("A1", 30)]


async def test_typed_output_and_deps_are_given_again_on_resume() -> None:
    class Receipt(BaseModel):
        order_id: str

    @tool(approve=True)
    def refund_for(ctx: RunContext[str], order_id: str) -> str:
        """Refunds."""
        return f"{ctx.deps} refunded {order_id}"

    answer = ToolCall("a1", "final_answer", '{"order_id": "A1"}')
    model = ScriptedModel([reply(ToolCall("c1", "refund_for", '{"order_id": "A1"}')),
                           reply(answer)])  # fmt: skip
    agent = Agent(model, tools=[refund_for])
    paused = await agent.run("refund", output=Receipt, deps="shop-1")
    assert paused.output is None
    done = await agent.resume(paused, decisions={"c1": Approve()}, output=Receipt, deps="shop-2")
    assert done.output == Receipt(order_id="A1")
    assert results(done.messages)[0] == ("c1", "shop-2 refunded A1")


async def test_events_and_stream_show_the_decisions_and_the_pause() -> None:
    shop = Shop()

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        return Deny("no") if call.call_id == "r1" else Defer()

    agent = Agent(
        ScriptedModel([reply(refund("r1"), refund("r2"))]),
        tools=shop_tools(shop),
        approver=approver,
    )
    events: list[Event] = [e async for e in agent.stream("go")]
    decided = [(e.call.id, e.decision) for e in events if isinstance(e, CallDecided)]
    assert decided == [("r1", "denied"), ("r2", "deferred")]
    denied = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.result.content for e in denied] == ["denied by the reviewer: no"]
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert last.result.stop_reason == "approval"


def test_an_approved_call_runs_once_across_a_kill_between_pause_and_resume(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs.db"
    script = str(HERE / "approval_process.py")
    effects = tmp_path / "effects.log"
    with subprocess.Popen(
        [sys.executable, script, str(store), "pause"], stdout=subprocess.PIPE, text=True
    ) as first:
        try:
            assert first.stdout is not None
            run_id, stop_reason = first.stdout.readline().split()
            assert stop_reason == "approval"
            first.send_signal(signal.SIGKILL)
            assert first.wait(timeout=30) == -signal.SIGKILL
        finally:
            first.kill()
    assert effects.read_text().split() == ["lookup_order"]
    resumed = subprocess.run(
        [sys.executable, script, str(store), "resume", run_id],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "Refunded."
    assert effects.read_text().split() == ["lookup_order", "issue_refund"]
    again = subprocess.run(
        [sys.executable, script, str(store), "resume", run_id],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert again.returncode != 0
    assert "is not waiting for approval" in again.stderr
    assert effects.read_text().split() == ["lookup_order", "issue_refund"]
    log = RunStore(store, read_only=True)
    assert calls_answered(log.messages(run_id))
    assert log.run(run_id).status == "answered"


# -- any interleaving of decisions leaves a valid transcript ---------------------------------

decisions_strategy = st.sampled_from(["approve", "deny", "edit", "defer", "ungated"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(st.lists(decisions_strategy, min_size=1, max_size=4), min_size=1, max_size=4),
    resume_with=st.lists(st.sampled_from(["approve", "deny", "edit"]), min_size=16, max_size=16),
    log=st.booleans(),
)
def test_any_interleaving_of_decisions_leaves_a_valid_transcript(
    turns: list[list[str]], resume_with: list[str], log: bool, tmp_path_factory: Any
) -> None:
    ran: list[str] = []
    plan = {f"t{t}c{c}": kind for t, kinds in enumerate(turns) for c, kind in enumerate(kinds)}

    @tool(approve=lambda arguments: plan[arguments["key"]] != "ungated")
    def act(key: str, amount: int = 1) -> str:
        """Acts once."""
        ran.append(key)
        return f"{key} done with {amount}"

    def model(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        assert calls_answered([*messages, AssistantMessage()])
        turn = sum(isinstance(m, AssistantMessage) for m in messages)
        if turn >= len(turns):
            return AssistantMessage("finished")
        return reply(
            *(
                ToolCall(f"t{turn}c{c}", "act", json.dumps({"key": f"t{turn}c{c}"}))
                for c in range(len(turns[turn]))
            )
        )

    def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        return as_decision(plan[call.call_id], call)

    store = RunStore(tmp_path_factory.mktemp("log") / "runs.db") if log else None
    agent = Agent(FunctionModel(model), tools=[act], approver=approver, store=store)
    result: RunResult[Any] = agent.run_sync("go")
    fresh = iter(resume_with)
    while result.stop_reason == "approval":
        assert calls_answered(result.messages)  # what ran, and each waiting call as waiting
        if store is not None:
            assert store.messages(str(result.run_id)) == result.messages
        chosen = {p: as_decision(next(fresh), p) for p in result.pending}
        result = asyncio.run(agent.resume(result, decisions=chosen))
    assert result.output == "finished"
    assert calls_answered(result.messages)
    if store is not None:
        assert store.messages(str(result.run_id)) == result.messages
    every_call = [c.id for m in result.messages if isinstance(m, AssistantMessage)
                  for c in m.tool_calls]  # fmt: skip
    assert [r.call_id for r in result.messages if isinstance(r, ToolResult)] == every_call
    assert len(ran) == len(set(ran))  # nothing ran twice
    for answer in (m for m in result.messages if isinstance(m, ToolResult)):
        if answer.content.startswith("denied"):
            assert answer.call_id not in ran
    if store is not None:
        assert result.run_id is not None
        assert store.messages(result.run_id) == result.messages
        store.close()


def as_decision(kind: str, call: PendingCall) -> Decision:
    if kind == "deny":
        return Deny("no")
    if kind == "edit":
        return Edit({**call.arguments, "amount": 2})
    if kind == "defer":
        return Defer()
    return Approve()
