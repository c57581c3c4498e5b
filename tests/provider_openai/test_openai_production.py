"""Typed answers, approvals and images through the official `openai` SDK against the strict
local fake server, once on Chat Completions and once on Responses: every follow-up request passes
the providers' history rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from provider_openai.openai_fake_server import FakeOpenAI, Reply
from steadyloop import (
    Agent,
    Approve,
    ConfigError,
    Deny,
    Document,
    Edit,
    Image,
    ToolResult,
    UserMessage,
    tool,
)
from steadyloop.approvals import Decision
from steadyloop.messages import user_message
from steadyloop.models.base import ModelRequest
from steadyloop.models.openai_base import OpenAIModel
from steadyloop.models.openai_chat import chat_messages
from steadyloop.models.openai_responses import responses_input
from steadyloop.models.wire import ToolNames
from steadyloop.retry import Backoff
from steadyloop.store import RunStore
from support.samples import PDF, PNG

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


def results_sent(server: FakeOpenAI, request: int) -> list[tuple[str, str]]:
    """(call id, content) of the tool results in one recorded request, in order."""
    body = server.requests[request]
    if "messages" in body:
        return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]
    return [
        (i["call_id"], i["output"])
        for i in body["input"]
        if i.get("type") == "function_call_output"
    ]


async def test_histories_after_pause_deny_edit_and_resume_pass_the_wire_rules(
    server: FakeOpenAI, make_model: MakeModel, tmp_path: Path
) -> None:
    refunds: list[tuple[str, float]] = []

    @tool(approve=True)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refunds an order."""
        refunds.append((order_id, amount))
        return f"refunded {amount:g}"

    server.queue(
        Reply(
            calls=[
                ("call_a", "issue_refund", '{"order_id": "A", "amount": 10}'),
                ("call_l", "lookup_order", '{"order_id": "A"}'),
                ("call_b", "issue_refund", '{"order_id": "B", "amount": 900}'),
                ("call_c", "issue_refund", '{"order_id": "C", "amount": 5}'),
            ]
        ),
        Reply(calls=[("call_d", "issue_refund", '{"order_id": "D", "amount": 1}')]),
        Reply(text="All settled."),
    )
    store = RunStore(tmp_path / "runs.db")
    agent = Agent(
        make_model(), tools=[issue_refund, lookup_order], backoff=Backoff.none(), store=store
    )
    paused = await agent.run("Refund A, B and C")
    assert [p.call_id for p in paused.pending] == ["call_a", "call_b", "call_c"]
    decisions: dict[str, Decision] = {
        "call_a": Approve(),
        "call_b": Edit({"order_id": "B", "amount": 90}),
        "call_c": Deny("C was refunded already"),
    }
    again = await agent.resume(paused, decisions=decisions)
    assert again.stop_reason == "approval"  # the next reply asks for another refund
    done = await agent.resume(again.run_id or "", decisions={"call_d": Approve()})
    assert done.output == "All settled."
    assert server.rejected == []
    assert refunds == [("A", 10), ("B", 90), ("D", 1)]
    sent = results_sent(server, 1)
    assert [call_id for call_id, _ in sent] == ["call_a", "call_l", "call_b", "call_c"]
    assert sent[0][1] == "refunded 10"
    assert sent[2][1].startswith("the reviewer changed the arguments")
    assert sent[3][1] == "denied by the reviewer: C was refunded already"
    assert results_sent(server, 2)[-1] == ("call_d", "refunded 1")
    store.close()


# -- images and documents in the prompt ----------------------------------------------------


def prompt_parts(tmp_path: Path) -> list[str | Image | Document]:
    (tmp_path / "terms.pdf").write_bytes(PDF)
    (tmp_path / "policy.txt").write_text("Refunds within 30 days.")
    return [
        "Is this refundable?",
        Image.from_bytes(PNG),
        Image.from_url("https://example.com/receipt.jpg"),
        Document.from_path(tmp_path / "terms.pdf"),
        Document.from_path(tmp_path / "policy.txt"),
    ]


def test_chat_parts_follow_the_sdks_documented_shapes(tmp_path: Path) -> None:
    from openai.types.chat import ChatCompletionContentPartParam

    message = user_message(prompt_parts(tmp_path))
    (sent,) = chat_messages(ModelRequest(None, (message,), ()), ToolNames(()))
    assert sent["role"] == "user"
    content = sent["content"]
    check = TypeAdapter(ChatCompletionContentPartParam)
    for part in content:
        check.validate_python(part)
    assert [p["type"] for p in content] == ["text", "image_url", "image_url", "file", "text"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert content[2]["image_url"]["url"] == "https://example.com/receipt.jpg"
    assert content[3]["file"]["filename"] == "terms.pdf"
    assert content[3]["file"]["file_data"].startswith("data:application/pdf;base64,")
    assert content[4]["text"] == "[document: policy.txt]\nRefunds within 30 days."


def test_responses_parts_follow_the_sdks_documented_shapes(tmp_path: Path) -> None:
    from openai.types.responses import (
        ResponseInputFileParam,
        ResponseInputImageParam,
        ResponseInputTextParam,
    )

    message = user_message(prompt_parts(tmp_path))
    (sent,) = responses_input(ModelRequest(None, (message,), ()), ToolNames(()))
    shapes: dict[str, Any] = {
        "input_text": ResponseInputTextParam,
        "input_image": ResponseInputImageParam,
        "input_file": ResponseInputFileParam,
    }
    for part in sent["content"]:
        TypeAdapter(shapes[part["type"]]).validate_python(part)
    assert [p["type"] for p in sent["content"]] == [
        "input_text", "input_image", "input_image", "input_file", "input_text"
    ]  # fmt: skip
    assert sent["content"][1]["detail"] == "auto"


async def test_a_prompt_with_images_and_documents_passes_the_server(
    server: FakeOpenAI, make_model: MakeModel, tmp_path: Path
) -> None:
    server.queue(Reply(calls=[("c1", "lookup_order", '{"order_id": "A1"}')]), Reply(text="Yes."))
    agent = Agent(make_model(), tools=[lookup_order], backoff=Backoff.none())
    result = await agent.run(prompt_parts(tmp_path))
    assert result.output == "Yes."
    assert server.rejected == []
    for body in server.requests:  # the prompt is sent whole on every turn
        sent = json.dumps(body)
        assert sent.count("data:image/png;base64,") == 1
        assert sent.count("data:application/pdf;base64,") == 1


async def test_a_part_the_server_cannot_take_fails_before_anything_is_sent(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    from steadyloop.models.ollama import from_spec

    local = from_spec("llava", base_url=server.base_url)
    try:
        for part in (Image.from_url("https://example.com/a.png"), prompt_parts(tmp_path)[3]):
            with pytest.raises(ConfigError) as error:
                await Agent(local, backoff=Backoff.none()).run(["look", part])
            assert str(error.value).startswith("ollama:llava cannot ")
        with pytest.raises(
            ConfigError, match="takes PNG, JPEG, GIF and WebP images, not image/bmp"
        ):
            await Agent(local).run(["look", Image.from_bytes(b"BM..", media_type="image/bmp")])
    finally:
        await local.aclose()
    assert server.requests == []
