"""Typed answers, approvals and images through the official `openai` SDK against the strict
local fake server, once on Chat Completions and once on Responses: every follow-up request passes
the providers' history rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from openai_fake_server import FakeOpenAI, Reply
from pydantic import BaseModel

from steadyloop import Agent, ToolResult, UserMessage, tool
from steadyloop.models.openai_chat import OpenAIModel
from steadyloop.retry import Backoff

MakeModel = Callable[..., OpenAIModel]  # the `make_model` fixture (conftest.py)


class Refund(BaseModel):
    order_id: str
    amount: float


@tool
def lookup_order(order_id: str) -> str:
    """The order's status."""
    return f"{order_id}: delivered"


def tools_sent(server: FakeOpenAI, request: int) -> list[str]:
    tools = server.requests[request].get("tools") or []
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


async def test_a_typed_answer_through_final_answer_with_a_nudge_and_a_bad_answer(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    server.queue(
        Reply(calls=[("c1", "lookup_order", '{"order_id": "A1"}')]),
        Reply(text="A1 is refundable."),  # text while the answer is due: nudged
        Reply(calls=[("c2", "final_answer", '{"order_id": "A1"}')]),  # missing amount
        Reply(calls=[("c3", "final_answer", '{"order_id": "A1", "amount": 30}')]),
    )
    agent = Agent(make_model(), tools=[lookup_order], output=Refund, backoff=Backoff.none())
    result = await agent.run("Refund A1")
    assert result.output == Refund(order_id="A1", amount=30)
    assert server.rejected == []
    assert tools_sent(server, 0) == ["lookup_order", "final_answer"]
    # no tool_choice and no provider JSON mode: one mechanism everywhere
    for body in server.requests:
        assert "tool_choice" not in body
        assert "response_format" not in body
        assert "text" not in body
    nudges = [m for m in result.messages if isinstance(m, UserMessage)][1:]
    assert len(nudges) == 1
    assert "final_answer" in nudges[0].text
    errors = [m for m in result.messages if isinstance(m, ToolResult) and m.is_error]
    assert [e.content for e in errors] == [
        "invalid arguments for final_answer:\n- amount: required, but not given"
    ]
    assert "final_answer" in json.dumps(server.requests[2])


async def test_a_typed_answer_streams_too(server: FakeOpenAI, make_model: MakeModel) -> None:
    server.queue(Reply(calls=[("c1", "final_answer", '{"value": [1, 2]}')]))
    agent = Agent(make_model(), backoff=Backoff.none())
    events: list[Any] = [e async for e in agent.stream("numbers", output=list[int])]
    assert events[-1].result.output == [1, 2]
    assert server.requests[0]["stream"] is True
