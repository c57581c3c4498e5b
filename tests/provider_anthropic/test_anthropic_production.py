"""Typed answers, approvals and images against the strict fake Anthropic server, through the
official SDK: every follow-up request passes Anthropic's history rules."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from provider_anthropic.anthropic_fake_server import (
    FakeAnthropic,
    message,
    model_for,
    text,
    tool_use,
)
from steadyloop import (
    Agent,
    Approve,
    ConfigError,
    Deny,
    Document,
    Edit,
    Image,
    ToolResult,
    tool,
)
from steadyloop.messages import user_message
from steadyloop.models.anthropic_wire import to_wire_messages
from steadyloop.models.wire import ToolNames
from steadyloop.retry import Backoff
from support.samples import PDF, PNG


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
        "cache_control": {"type": "ephemeral"},  # the latest user turn's last block
    }


# -- images and documents in the prompt ----------------------------------------------------


def prompt_parts(tmp_path: Path) -> list[str | Image | Document]:
    (tmp_path / "terms.pdf").write_bytes(PDF)
    (tmp_path / "policy.md").write_text("Refunds within 30 days.")
    return [
        "Is this refundable?",
        Image.from_bytes(PNG),
        Image.from_url("https://example.com/receipt.jpg"),
        Document.from_path(tmp_path / "terms.pdf"),
        Document.from_path(tmp_path / "policy.md"),
    ]


def test_blocks_follow_the_sdks_documented_shapes(tmp_path: Path) -> None:
    from anthropic.types import DocumentBlockParam, ImageBlockParam, TextBlockParam

    message = user_message(prompt_parts(tmp_path))
    (turn,) = to_wire_messages([message], ToolNames(()))
    shapes: dict[str, Any] = {
        "text": TextBlockParam,
        "image": ImageBlockParam,
        "document": DocumentBlockParam,
    }
    for block in turn["content"]:
        TypeAdapter(shapes[block["type"]]).validate_python(block)
    assert [b["type"] for b in turn["content"]] == [
        "text",
        "image",
        "image",
        "document",
        "document",
    ]
    assert turn["content"][1]["source"] == {
        "type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()
    }  # fmt: skip
    assert turn["content"][2]["source"] == {"type": "url", "url": "https://example.com/receipt.jpg"}
    assert turn["content"][3]["source"]["media_type"] == "application/pdf"
    assert turn["content"][4] == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "Refunds within 30 days."},
        "title": "policy.md",
    }


async def test_a_prompt_with_images_and_documents_passes_the_server(tmp_path: Path) -> None:
    replies = [
        message(tool_use("toolu_1", "lookup_order", {"order_id": "A1"})),
        message(text("Yes.")),
    ]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake) as agent:
            result = await agent.run(prompt_parts(tmp_path))
    assert fake.rejections == []
    assert result.output == "Yes."
    first_turn = fake.requests[1]["messages"][0]["content"]
    assert [b["type"] for b in first_turn] == ["text", "image", "image", "document", "document"]


async def test_an_image_type_anthropic_cannot_take_fails_before_anything_is_sent() -> None:
    with FakeAnthropic([]) as fake:
        async with agent_for(fake) as agent:
            with pytest.raises(ConfigError, match="anthropic takes PNG, JPEG, GIF and WebP"):
                await agent.run(["look", Image.from_bytes(b"II*\0", media_type="image/tiff")])
    assert fake.requests == []
