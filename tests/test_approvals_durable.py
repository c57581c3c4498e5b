"""Approvals that outlive a process, a cancelled run or a copied result: a decision to run a
call is in the log before the call starts, an undecided call waits again, and a decision binds
to the run it was made for."""

from __future__ import annotations

import asyncio
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from steadyloop import (
    Agent,
    Approve,
    ConfigError,
    Edit,
    PendingCall,
    RunContext,
    ToolCall,
    tool,
)
from steadyloop.approvals import Decision
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel
from steadyloop.transcript import calls_answered
from test_approvals import Shop, refund, reply, results, shop_tools

HERE = Path(__file__).resolve().parent
SCRIPT = str(HERE / "approval_process.py")


def approval_process(store: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, SCRIPT, str(store), *arguments],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def paused_in_a_process(store: Path) -> str:
    """Runs approval_process.py until its run pauses, kills it, and returns the run id."""
    with subprocess.Popen(
        [sys.executable, SCRIPT, str(store), "pause"], stdout=subprocess.PIPE, text=True
    ) as first:
        try:
            assert first.stdout is not None
            run_id, stop_reason = first.stdout.readline().split()
            assert stop_reason == "approval"
        finally:
            first.kill()
    return run_id


def test_an_approved_call_killed_after_its_effect_is_not_asked_for_or_run_again(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs.db"
    effects = tmp_path / "effects.log"
    run_id = paused_in_a_process(store)

    died = approval_process(store, "resume-then-die", run_id)
    assert died.returncode == -signal.SIGKILL
    assert effects.read_text().split() == ["lookup_order", "issue_refund"]

    # The approval was in the log before the refund ran: the call is no longer waiting, so a
    # second approval is refused and runs nothing.
    again = approval_process(store, "resume", run_id)
    assert again.returncode != 0
    assert "is not waiting for approval" in again.stderr
    assert effects.read_text().split() == ["lookup_order", "issue_refund"]

    # Going on answers the refund "interrupted" (it is not idempotent) and never runs it again.
    went_on = approval_process(store, "continue", run_id)
    assert went_on.returncode == 0, went_on.stderr
    output, *answers = went_on.stdout.splitlines()
    assert output == "Refunded."
    assert answers[0].startswith("refund_1: interrupted: the run stopped while this call")
    assert answers[1] == "lookup_1: A1: delivered"
    assert effects.read_text().split() == ["lookup_order", "issue_refund"]
    log = RunStore(store, read_only=True)
    assert calls_answered(log.messages(run_id))
    assert log.run(run_id).status == "answered"
    log.close()


async def cancelled_while_running(agent: Agent[Any], started: asyncio.Event, run_id: str) -> None:
    """Starts run `run_id` and cancels it (as Ctrl-C or a shutdown does) once `started` is set."""
    task = asyncio.create_task(agent.run("Refund A1", run_id=run_id))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_call_whose_approver_was_still_deciding_waits_for_a_decision_again(
    tmp_path: Path,
) -> None:
    shop = Shop()
    asked = asyncio.Event()

    async def approver(call: PendingCall, ctx: RunContext[Any]) -> Decision:
        asked.set()
        await asyncio.Event().wait()  # a person who has not answered yet
        raise AssertionError("unreachable")

    store = RunStore(tmp_path / "runs.db")
    model = ScriptedModel([reply(refund("r1")), "Refunded A1."])
    agent = Agent(model, tools=shop_tools(shop), approver=approver, store=store)
    await cancelled_while_running(agent, asked, "ticket-1")
    assert store.run("ticket-1").status == "interrupted"
    assert shop.refunds == []

    paused = await agent.resume("ticket-1")
    assert paused.stop_reason == "approval"
    assert paused.pending == (
        PendingCall("r1", "issue_refund", {"order_id": "A1", "amount": 30}, "ticket-1"),
    )
    assert len(model.requests) == 1  # the model was not told anything yet
    assert shop.refunds == []

    done = await agent.resume("ticket-1", decisions={"r1": Approve()})
    assert done.output == "Refunded A1."
    assert shop.refunds == [("A1", 30)]
    assert results(done.messages) == [("r1", "refunded 30 on A1")]
    store.close()


@pytest.mark.parametrize("idempotent", [True, False])
async def test_an_approved_call_cut_short_runs_again_as_decided_only_when_idempotent(
    tmp_path: Path, idempotent: bool
) -> None:
    ran: list[int] = []
    running = asyncio.Event()
    first_attempt = True

    @tool(approve=True, idempotent=idempotent)
    async def set_price(item: str, price: int) -> str:
        """Sets an item's price."""
        nonlocal first_attempt
        ran.append(price)
        if first_attempt:
            first_attempt = False
            running.set()
            await asyncio.Event().wait()  # the run is stopped while this call is running
        return f"{item} now costs {price}"

    store = RunStore(tmp_path / "runs.db")
    call = ToolCall("p1", "set_price", '{"item": "tea", "price": 500}')
    model = ScriptedModel([reply(call), "Price set."])
    agent = Agent(model, tools=[set_price], store=store)
    paused = await agent.run("Set the price", run_id="price-1")
    edit = Edit({"item": "tea", "price": 5})
    task = asyncio.create_task(agent.resume(paused, decisions={"p1": edit}))
    await running.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    done = await agent.resume("price-1")
    assert done.output == "Price set."
    (answer,) = results(done.messages)
    if idempotent:  # run again with the reviewer's arguments, not asked for again
        assert ran == [5, 5]
        assert answer[1].endswith("tea now costs 5")
    else:
        assert ran == [5]
        assert answer[1].startswith("interrupted: the run stopped while this call was running")
    store.close()


async def test_a_decision_keyed_by_another_run_s_pending_call_is_refused_even_with_the_same_id(
    tmp_path: Path,
) -> None:
    shop = Shop()
    store = RunStore(tmp_path / "runs.db")
    # Both runs' calls look alike: the same id (as `call_0` is for a provider that sends none)
    # and the same arguments.
    model = ScriptedModel([reply(refund("call_0")), reply(refund("call_0")), "Refunded."])
    agent = Agent(model, tools=shop_tools(shop), store=store)
    first = await agent.run("refund for Ada")
    second = await agent.run("refund for Bob")
    assert first.pending[0].run_id == first.run_id
    assert second.pending[0].run_id == second.run_id
    assert second.run_id is not None
    with pytest.raises(ConfigError, match=f"was made for a call of run {first.run_id}") as error:
        await agent.resume(second.run_id, decisions={first.pending[0]: Approve()})
    assert "\n" not in str(error.value)
    assert shop.refunds == []
    assert store.run(second.run_id).status == "paused"
    # The run's own pending call decides it.
    await agent.resume(second, decisions={second.pending[0]: Approve()})
    assert shop.refunds == [("A1", 30)]
    store.close()


async def test_copies_of_a_paused_result_resume_once_when_the_agent_has_a_run_log(
    tmp_path: Path,
) -> None:
    shop = Shop()
    store = RunStore(tmp_path / "runs.db")
    model = ScriptedModel([reply(refund("r1")), "Refunded."])
    agent = Agent(model, tools=shop_tools(shop), store=store)
    saved = pickle.dumps(await agent.run("Refund A1"))
    one, other = pickle.loads(saved), pickle.loads(saved)  # two requests of a web app

    done = await agent.resume(one, decisions={one.pending[0]: Approve()})
    assert done.output == "Refunded."
    with pytest.raises(ConfigError, match="is not waiting for approval"):
        await agent.resume(other, decisions={other.pending[0]: Approve()})
    assert shop.refunds == [("A1", 30)]
    store.close()


async def test_copies_of_a_paused_result_resumed_at_once_run_the_call_once(
    tmp_path: Path,
) -> None:
    refunds: list[str] = []
    refunding = asyncio.Event()
    finish = asyncio.Event()

    @tool(approve=True)
    async def issue_refund(order_id: str) -> str:
        """Refunds an order."""
        refunds.append(order_id)
        refunding.set()
        await finish.wait()
        return f"refunded {order_id}"

    store = RunStore(tmp_path / "runs.db")
    call = ToolCall("r1", "issue_refund", '{"order_id": "A1"}')
    agent = Agent(ScriptedModel([reply(call), "Refunded."]), tools=[issue_refund], store=store)
    saved = pickle.dumps(await agent.run("Refund A1"))
    one, other = pickle.loads(saved), pickle.loads(saved)

    first = asyncio.create_task(agent.resume(one, decisions={"r1": Approve()}))
    await refunding.wait()
    with pytest.raises(ConfigError, match="still running"):
        await agent.resume(other, decisions={"r1": Approve()})
    finish.set()
    assert (await first).output == "Refunded."
    assert refunds == ["A1"]
    store.close()
