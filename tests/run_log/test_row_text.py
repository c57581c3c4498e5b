"""The rows a turn writes most (a model request, its reply, each call's answer) are written as
JSON text directly; every one is the very text the general way writes for the same event, down
to the reply's rarer fields, images, sub-agent usage and text that is not ASCII."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from steadyloop import AssistantMessage, Image, ToolCall, ToolResult, Usage
from steadyloop.events import Event, MessageAdded, ModelRequestStarted, ToolCallFinished
from steadyloop.messages import Message, Native, Reasoning, UserMessage
from steadyloop.store.recording import event_data, event_text

CALL = ToolCall("call_1", "add", '{"a": 1, "b": "é\\n"}')
USAGE = Usage(input_tokens=12, output_tokens=3, cost_usd=0.25)
RESULT = ToolResult("call_1", "add", "3 — fine")

# A value for each field of a reply, so that a field added later is either written here too
# or makes this test say so.
REPLY_FIELDS: dict[str, Any] = {
    "text": 'said "so"\tthen 日本',
    "tool_calls": (CALL, ToolCall("call_2", "add", {"a": 2, "b": [1.5, None, True]})),
    "usage": USAGE,
    "stop_reason": "tool_use",
    "reasoning": (Reasoning("anthropic", {"signature": "x"}),),
    "response_id": "resp_1",
    "native": Native("openai-chat", "https://api", "gpt", {"role": "assistant"}),
    "reasoning_text": "because",
    "model": "openai:gpt-4.1-mini",
}


def general(event: Event) -> tuple[str, str]:
    """The row the general way writes: the event's data, encoded as the log encodes it."""
    kind, data = event_data(event)
    return kind, json.dumps(data, check_circular=False)


def replies() -> list[AssistantMessage]:
    """A reply with each field set alone, one with all of them, and a bare one."""
    single = [AssistantMessage(**{name: value}) for name, value in REPLY_FIELDS.items()]
    return [*single, AssistantMessage(**REPLY_FIELDS), AssistantMessage()]


def finished_events() -> list[ToolCallFinished]:
    truncated = dataclasses.replace(RESULT, content="3 —")
    return [
        ToolCallFinished(CALL, RESULT, RESULT.content, 0.000123456789, 1),
        ToolCallFinished(CALL, truncated, RESULT.content, 12.5, 3),
        ToolCallFinished(CALL, dataclasses.replace(RESULT, is_error=True), "3 — fine", 1e-7, 2),
        ToolCallFinished(CALL, RESULT, RESULT.content, 0.5, 1, usage=USAGE),
        ToolCallFinished(
            CALL,
            dataclasses.replace(RESULT, images=(Image("image/png", "aGk="),)),
            RESULT.content,
            0.5,
            1,
        ),
        ToolCallFinished(ToolCall("c", "t", {"x": 1}), RESULT, RESULT.content, 0.25, 1),
    ]


def events() -> list[Event]:
    messages: list[Message] = [*replies(), UserMessage("go"), RESULT]
    return [
        *(MessageAdded(index, message) for index, message in enumerate(messages)),
        *finished_events(),
        ModelRequestStarted(turn=3, context_tokens=1234, max_context_tokens=200_000, view_length=7),
    ]


def test_every_field_of_a_reply_has_a_sample() -> None:
    fields = {f.name for f in dataclasses.fields(AssistantMessage) if not f.name.startswith("_")}
    assert fields == set(REPLY_FIELDS)


@pytest.mark.parametrize("event", events(), ids=lambda event: type(event).__name__)
def test_each_row_is_the_text_the_general_way_writes(event: Event) -> None:
    assert event_text(event) == general(event)


def test_a_field_of_an_unexpected_type_is_still_written_as_its_json() -> None:
    event = ToolCallFinished(ToolCall(7, "add", "{}"), RESULT, RESULT.content, 0.5, True)  # type: ignore[arg-type]
    kind, text = event_text(event)
    assert (kind, json.loads(text)) == (kind, json.loads(general(event)[1]))
    assert json.loads(text)["call"]["id"] == 7
    assert json.loads(text)["attempts"] is True
