"""The run log holds what the model read: the transcript it rebuilds is the run's own, whatever
kind of run it was (`result.messages == store.messages(run_id)`), and a paused run's messages
tell a run continued from them what already ran."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from steadyloop import (
    Agent,
    Approve,
    AssistantMessage,
    Compaction,
    FatalToolError,
    LimitExceeded,
    Limits,
    RunResult,
    ToolCall,
    ToolError,
    ToolResult,
    tool,
)
from steadyloop.approvals import WAITING_TEXT
from steadyloop.repeats import ALREADY_HAVE_TEXT
from steadyloop.retry import Backoff
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel
from steadyloop.texts import UNANSWERED
from steadyloop.transcript import calls_answered

sent: list[str] = []


@tool
def lookup(order_id: str) -> str:
    """Looks an order up."""
    return f"{order_id}: delivered " + "x" * 200


@tool
def broken(order_id: str) -> str:
    """Always fails."""
    raise ToolError(f"order {order_id} is locked")


@tool
def halt(order_id: str) -> str:
    """Stops the run."""
    raise FatalToolError("the order system is gone")


@tool
def send_email(to: str) -> str:
    """Sends an email."""
    sent.append(to)
    return f"sent to {to}"


@tool(approve=True)
def issue_refund(order_id: str) -> str:
    """Refunds an order; a person approves it first."""
    return f"refunded {order_id}"


class Refund(BaseModel):
    order_id: str


def calls(*items: tuple[str, str]) -> AssistantMessage:
    """One reply calling each (tool, order id) with ids c0, c1, ... unless named."""
    made = tuple(
        ToolCall(f"c{index}", name, {"to" if name == "send_email" else "order_id": value})
        for index, (name, value) in enumerate(items)
    )
    return AssistantMessage(tool_calls=made)


def answer(order_id: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall("f", "final_answer", {"order_id": order_id}),))


TOOLS = [lookup, broken, halt, send_email, issue_refund]

# name: (replies, agent options); each run is logged, and may end by raising.
RUNS: dict[str, tuple[list[Any], dict[str, Any]]] = {
    "plain": ([calls(("lookup", "A1")), "done"], {}),
    "error results": ([calls(("broken", "A1"), ("lookup", "A2")), "done"], {}),
    "truncated output": ([calls(("lookup", "A1")), "done"], {"max_tool_output": 40}),
    "repeat guard": ([calls(("lookup", "A1"))] * 3 + ["done"], {}),
    "typed answer": ([calls(("lookup", "A1")), answer("A1")], {"output": Refund}),
    "pause": ([calls(("send_email", "a@example.com"), ("issue_refund", "A1"))], {}),
    "turn limit": ([calls(("lookup", "A1")), calls(("lookup", "A2"))], {"limits": Limits(1)}),
    "repeat limit": ([calls(("broken", "A1"))] * 3, {}),
    "fatal tool error": ([calls(("halt", "A1"))], {}),
    "compaction": (
        [calls(("lookup", f"A{i}")) for i in range(6)] + ["done"],
        {
            "compaction": Compaction(keep_recent=2, trigger=0.5, summarise=lambda m: "gist"),
            "limits": Limits(max_context_tokens=300),
        },
    ),
}


def logged_run(
    tmp_path: Path, replies: list[Any], **options: Any
) -> tuple[RunResult[Any], RunStore]:
    store = RunStore(tmp_path / "runs.db")
    agent = Agent(
        ScriptedModel(replies), tools=TOOLS, store=store, backoff=Backoff.none(), **options
    )
    try:
        return agent.run_sync("Help with my orders", run_id="r1"), store
    except (LimitExceeded, FatalToolError) as exc:
        stopped = exc.result
    assert stopped is not None
    return stopped, store


@pytest.mark.parametrize("kind", list(RUNS))
def test_the_log_rebuilds_the_transcript_the_model_read(tmp_path: Path, kind: str) -> None:
    replies, options = RUNS[kind]
    result, store = logged_run(tmp_path, replies, **options)
    assert calls_answered(result.messages)
    assert store.messages("r1") == result.messages


def test_a_result_the_repeat_guard_replaced_is_logged_as_the_model_read_it(
    tmp_path: Path,
) -> None:
    _, store = logged_run(tmp_path, [calls(("lookup", "A1"))] * 3 + ["done"])
    replaced = ALREADY_HAVE_TEXT.format(name="lookup", count=3)
    contents = [m.content for m in store.messages("r1") if isinstance(m, ToolResult)]
    assert contents[2] == replaced
    assert contents[0] == contents[1] != replaced
    # the tool's own output stays in the log as well, beside what the model read
    assert store.tool_records("r1")["c0_3"].output.startswith("A1: delivered")


def test_a_fatal_tool_error_stops_the_run_as_an_error(tmp_path: Path) -> None:
    result, store = logged_run(tmp_path, [calls(("halt", "A1"), ("lookup", "A2"))])
    assert result.stop_reason == "error"
    info = store.run("r1")
    assert info.status == "error"
    assert "the order system is gone" in str(info.error)


# -- a paused run's messages carry what already ran ------------------------------------------


@pytest.fixture(autouse=True)
def no_emails_yet() -> None:
    sent.clear()


@pytest.mark.parametrize(
    "reply",
    [
        calls(("send_email", "a@example.com"), ("issue_refund", "A1")),
        calls(("issue_refund", "A1"), ("send_email", "a@example.com")),
    ],
    ids=["email first", "refund first"],
)
def test_a_run_continued_from_a_paused_result_reads_that_the_email_was_sent(
    tmp_path: Path, reply: AssistantMessage
) -> None:
    store = RunStore(tmp_path / "runs.db")
    model = ScriptedModel([reply])
    paused = Agent(model, tools=TOOLS, store=store).run_sync("Email and refund A1")
    assert paused.stop_reason == "approval"
    assert sent == ["a@example.com"]
    answers = {m.name: m.content for m in paused.messages if isinstance(m, ToolResult)}
    assert answers == {"send_email": "sent to a@example.com", "issue_refund": WAITING_TEXT}
    assert calls_answered(paused.messages)
    assert store.messages(str(paused.run_id)) == paused.messages

    # the user changes the request instead of deciding: the model reads what was done
    later = ScriptedModel(["Refunding half, as asked."])
    agent = Agent(later, tools=TOOLS, store=store)
    went_on = agent.run_sync("Actually, refund only half.", history=paused.messages)
    read = [m for m in later.requests[0].messages if isinstance(m, ToolResult)]
    assert {m.content for m in read} == {"sent to a@example.com", WAITING_TEXT}
    assert not any(m.content == UNANSWERED for m in went_on.messages if isinstance(m, ToolResult))
    assert store.messages(str(went_on.run_id)) == went_on.messages
    assert sent == ["a@example.com"]


@pytest.mark.parametrize("from_log", [True, False], ids=["by run id", "from the result"])
def test_resuming_a_pause_runs_the_decided_call_and_never_the_sibling_again(
    tmp_path: Path, from_log: bool
) -> None:
    reply = calls(("issue_refund", "A1"), ("send_email", "a@example.com"))
    store = RunStore(tmp_path / "runs.db") if from_log else None
    agent = Agent(ScriptedModel([reply, "Done."]), tools=TOOLS, store=store)
    paused = agent.run_sync("Email and refund A1")
    done = asyncio.run(
        agent.resume(str(paused.run_id) if from_log else paused, decisions={"c0": Approve()})
    )
    assert done.output == "Done."
    assert sent == ["a@example.com"]
    results = [(m.call_id, m.content) for m in done.messages if isinstance(m, ToolResult)]
    assert results == [("c0", "refunded A1"), ("c1", "sent to a@example.com")]
    assert calls_answered(done.messages)
    if store is not None:
        assert store.messages(str(done.run_id)) == done.messages
