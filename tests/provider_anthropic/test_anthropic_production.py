"""Typed answers, approvals and images against the strict fake Anthropic server, through the
official SDK: every follow-up request passes Anthropic's history rules."""

from __future__ import annotations

from typing import Any

from anthropic_fake_server import FakeAnthropic, message, model_for, text, tool_use
from pydantic import BaseModel

from steadyloop import Agent, Approve, Deny, Edit, ToolResult, tool
from steadyloop.retry import Backoff


class Refund(BaseModel):
    order_id: str
    amount: float


@tool
def lookup_order(order_id: str) -> str:
    """The order's status."""
    return f"{order_id}: delivered"


def agent_for(fake: FakeAnthropic, **options: Any) -> Agent[Any]:
    options.setdefault("tools", [lookup_order])
    return Agent(model_for(fake), backoff=Backoff.none(), **options)


async def test_a_typed_answer_through_final_answer_with_a_nudge_and_a_bad_answer() -> None:
    replies = [
        message(tool_use("toolu_1", "lookup_order", {"order_id": "A1"})),
        message(text("A1 is refundable.")),
        message(tool_use("toolu_2", "final_answer", {"order_id": "A1", "amount": "lots"})),
        message(tool_use("toolu_3", "final_answer", {"order_id": "A1", "amount": 30})),
    ]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake, output=Refund) as agent:
            result = await agent.run("Refund A1")
    assert fake.rejections == []
    assert result.output == Refund(order_id="A1", amount=30)
    assert [t["name"] for t in fake.requests[0]["tools"]] == ["lookup_order", "final_answer"]
    assert all("tool_choice" not in body for body in fake.requests)
    errors = [m for m in result.messages if isinstance(m, ToolResult) and m.is_error]
    assert len(errors) == 1
    assert errors[0].content.startswith("invalid arguments for final_answer:\n- amount: ")
    # the nudge follows the text reply as a user turn
    nudge_turn = fake.requests[2]["messages"][-1]
    assert nudge_turn["role"] == "user"
    assert "final_answer" in nudge_turn["content"][0]["text"]


async def test_histories_after_pause_deny_edit_and_resume_pass_the_wire_rules() -> None:
    refunds: list[tuple[str, float]] = []

    @tool(approve=True)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refunds an order."""
        refunds.append((order_id, amount))
        return f"refunded {amount:g}"

    replies = [
        message(
            text("Refunding."),
            tool_use("toolu_a", "issue_refund", {"order_id": "A", "amount": 10}),
            tool_use("toolu_l", "lookup_order", {"order_id": "A"}),
            tool_use("toolu_b", "issue_refund", {"order_id": "B", "amount": 900}),
            tool_use("toolu_c", "issue_refund", {"order_id": "C", "amount": 5}),
        ),
        message(tool_use("toolu_d", "issue_refund", {"order_id": "D", "amount": 1})),
        message(text("All settled.")),
    ]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake, tools=[issue_refund, lookup_order]) as agent:
            paused = await agent.run("Refund A, B and C")
            again = await agent.resume(
                paused,
                decisions={
                    "toolu_a": Approve(),
                    "toolu_b": Edit({"order_id": "B", "amount": 90}),
                    "toolu_c": Deny("C was refunded already"),
                },
            )
            done = await agent.resume(again, decisions={again.pending[0]: Approve()})
    assert fake.rejections == []
    assert done.output == "All settled."
    assert refunds == [("A", 10), ("B", 90), ("D", 1)]
    turn = fake.requests[1]["messages"][-1]
    assert [b["tool_use_id"] for b in turn["content"]] == [
        "toolu_a",
        "toolu_l",
        "toolu_b",
        "toolu_c",
    ]
    assert turn["content"][3] == {
        "type": "tool_result",
        "tool_use_id": "toolu_c",
        "content": "denied by the reviewer: C was refunded already",
        "is_error": True,
    }
