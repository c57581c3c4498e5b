"""Messages are frozen values that survive a trip through JSON unchanged."""

from __future__ import annotations

import dataclasses
import json

import pytest

from steadyloop import AssistantMessage, Summary, ToolCall, ToolResult, Usage, UserMessage
from steadyloop.messages import Image, Message, Reasoning, message_from_dict

EXAMPLES: list[Message] = [
    UserMessage("hello"),
    UserMessage(""),
    AssistantMessage(),
    AssistantMessage("just text", stop_reason="end_turn"),
    AssistantMessage(
        "let me look",
        (
            ToolCall("call_1", "search", '{"q": "refund"}'),
            ToolCall("", "get", ""),
            ToolCall("call_3", "get", {"id": 3, "nested": {"a": [1, 2]}}),
        ),
        Usage(10, 5, 1, 3, cache_read_tokens=4, cache_write_tokens=2),
        "tool_use",
        (Reasoning("anthropic", {"type": "thinking", "signature": "abc"}),),
    ),
    ToolResult("call_1", "search", "3 tickets", False),
    ToolResult("call_2", "get", "get failed: KeyError", True),
    ToolResult("call_4", "shot", "an image", False, (Image("image/png", "iVBORw0KGgo="),)),
    Summary("the user wants refunds; two found", 7),
    UserMessage("unicode: ünïcødé 🎉 \u0000"),
]


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_round_trips_through_json(message: Message) -> None:
    wire = json.dumps(message.to_dict())
    again = message_from_dict(json.loads(wire))
    assert again == message
    assert type(again) is type(message)


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_the_class_own_from_dict_agrees(message: Message) -> None:
    assert type(message).from_dict(message.to_dict()) == message


def test_mapping_arguments_are_kept_as_a_mapping() -> None:
    call = ToolCall("c", "t", {"a": 1})
    again = ToolCall.from_dict(json.loads(json.dumps(call.to_dict())))
    assert again.arguments == {"a": 1}


def test_to_dict_names_the_kind() -> None:
    assert [m.to_dict()["type"] for m in EXAMPLES[:1]] == ["user"]
    assert AssistantMessage().to_dict() == {"type": "assistant", "text": ""}
    assert ToolResult("c", "t", "x").to_dict()["type"] == "tool_result"
    assert Summary("s", 2).to_dict() == {"type": "summary", "text": "s", "replaced": 2}


@pytest.mark.parametrize("data", [{}, {"type": "system", "text": "x"}, {"type": 3}])
def test_unknown_kind_is_a_clear_error(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="not a steadyloop message"):
        message_from_dict(data)


def test_messages_are_frozen() -> None:
    message = UserMessage("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.text = "b"  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        message.extra = 1  # type: ignore[attr-defined]


def test_usage_adds_field_by_field() -> None:
    total = Usage(1, 2, 3, 4, 5, 6) + Usage(10, 20, 30, 40, 50, 60)
    assert total == Usage(11, 22, 33, 44, 55, 66)
    assert Usage.from_dict({"input_tokens": "7", "unknown": 1}) == Usage(input_tokens=7)


def test_summary_note_names_how_many_messages_it_stands_for() -> None:
    assert Summary("facts", 12).note == "[12 earlier messages summarised]\nfacts"
