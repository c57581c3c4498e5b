"""Real recorded Anthropic traffic through the adapter's parsers and serializer.

Replies (JSON and SSE) become the right canonical messages; error bodies the right errors;
and the follow-up requests in the recordings, rebuilt from canonical history, come out in the
same shape the real API accepted (F03, F14, F19, F20, F29, F38, F40, F41).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from provider_anthropic.anthropic_cassettes import (
    NO_NAMES,
    RECORDINGS,
    Interaction,
    history_from_request,
    load,
    normalised,
    sse_events,
)
from provider_anthropic.anthropic_fake_server import validate
from steadyloop.errors import ConfigError, ModelError
from steadyloop.events import TextDelta, ToolCallDelta
from steadyloop.messages import AssistantMessage, Message, ToolCall
from steadyloop.models.anthropic import error_from_response
from steadyloop.models.anthropic_wire import (
    Origin,
    StreamAssembler,
    Target,
    build_request,
    parse_message,
    to_wire_messages,
)
from steadyloop.models.base import ModelRequest

HERE = Target("https://api.anthropic.com", "claude-recorded")


def reply_of(interaction: Interaction, origin: Origin | None = None) -> AssistantMessage:
    """The reply, through the stream assembler for SSE recordings; with `origin`, an own one."""
    if not interaction.streamed:
        return parse_message(interaction.body, NO_NAMES, origin)
    assembler = StreamAssembler(NO_NAMES, origin)
    for event in sse_events(interaction.body):
        assembler.feed(event)
    assert assembler.finished
    return assembler.result()


def test_every_recording_is_read() -> None:
    replies = [i for path in RECORDINGS for i in load(path) if i.status == 200]
    errors = [i for path in RECORDINGS for i in load(path) if i.status != 200]
    assert len(replies) == 15
    assert len(errors) == 3
    for interaction in replies:
        reply = reply_of(interaction)
        assert reply.stop_reason in {"end_turn", "tool_use", "max_tokens"}
        assert reply.usage is not None
        assert reply.usage.input_tokens > 0
        assert reply.text or reply.tool_calls


def test_text_and_four_parallel_calls_keep_their_order() -> None:
    """F19: the prose before the calls is kept, calls in order with object arguments."""
    reply = reply_of(load(RECORDINGS[0])[0])
    assert reply.text.startswith("I'll help you find out who is the youngest")
    assert [(c.id, json.loads(str(c.arguments))) for c in reply.tool_calls] == [
        ("toolu_0167cfEnoQaPviGdVXA95zcu", {"name": "Alice"}),
        ("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", {"name": "Bob"}),
        ("toolu_01XFyAjstT3966qvRynZyVPo", {"name": "Charlie"}),
        ("toolu_013mnQZbgtK2oe3Mo3XKJsx3", {"name": "Daisy"}),
    ]
    assert {c.name for c in reply.tool_calls} == {"retrieve_entity_info"}
    assert reply.stop_reason == "tool_use"
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (423, 202)


def test_thinking_block_is_kept_with_its_signature() -> None:
    """F40: thinking arrives first, with its signature, in plain and streamed replies."""
    plain = reply_of(load(RECORDINGS[1])[0], Origin(HERE.endpoint, HERE.model, ""))
    streamed = reply_of(load(RECORDINGS[7])[0], Origin(HERE.endpoint, HERE.model, ""))
    for reply in (plain, streamed):
        assert reply.native is not None
        (block, *_) = reply.native.content
        assert block["type"] == "thinking"
        assert str(block["signature"]).startswith("E")
        assert len(str(block["signature"])) > 300
        assert reply.tool_calls[0].arguments == "{}"
        assert reply.reasoning_text == block["thinking"]
    assert streamed.reasoning_text.startswith("The user wants me to:\n1. Use")


def test_no_argument_calls_streamed_as_empty_partial_json_mean_empty_object() -> None:
    """F14/F38: two parallel no-argument calls, `partial_json: ""` each."""
    interaction = load(RECORDINGS[4])[0]
    assembler = StreamAssembler(NO_NAMES)
    deltas = [d for e in sse_events(interaction.body) for d in assembler.feed(e)]
    reply = assembler.result()
    assert reply.tool_calls == (
        ToolCall("toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", "{}"),
        ToolCall("toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", "{}"),
    )
    starts = [d for d in deltas if isinstance(d, ToolCallDelta) and d.id]
    assert [(d.index, d.id) for d in starts] == [
        (0, reply.tool_calls[0].id),
        (1, reply.tool_calls[1].id),
    ]


def test_streamed_text_deltas_add_up_to_the_reply() -> None:
    for path in RECORDINGS:
        for interaction in load(path):
            if not interaction.streamed:
                continue
            assembler = StreamAssembler(NO_NAMES)
            deltas = [d for e in sse_events(interaction.body) for d in assembler.feed(e)]
            text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
            assert text == assembler.result().text


def test_output_cut_by_max_tokens_is_marked() -> None:
    """F41: the cut reply says max_tokens, so the loop never reports it as complete."""
    reply = reply_of(load(RECORDINGS[10])[0])
    assert reply.stop_reason == "max_tokens"
    assert reply.text == "# Who vs. Whom\n\n**Simple rule:** \n- **"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (RECORDINGS[3], "This model does not support effort level 'xhigh'"),
        (RECORDINGS[8], "messages.0: Input does not match the expected shape."),
        (RECORDINGS[11], "`tool_use` ids were found without `tool_result` blocks"),
    ],
)
def test_recorded_400s_are_not_retried(path: str, text: str) -> None:
    (interaction,) = load(path)
    error = error_from_response(interaction.status, interaction.body, interaction.headers)
    assert type(error) is ModelError
    assert not error.retryable
    assert error.status == 400
    assert text in str(error)
    assert not isinstance(error, ConfigError)


def sent(path: str, index: int) -> dict[str, Any]:
    return load(path)[index].request


def with_own_reply(path: str) -> tuple[list[Message], AssistantMessage]:
    """The recorded follow-up's history with its first reply as the API sent it (the first
    recorded response), an own reply bound to the turns before it."""
    history = history_from_request(sent(path, 1))
    index = next(i for i, m in enumerate(history) if isinstance(m, AssistantMessage))
    before = ModelRequest(None, tuple(history[:index]), ())
    prefix = build_request(before, NO_NAMES, HERE).prefix
    reply = reply_of(load(path)[0], Origin(HERE.endpoint, HERE.model, prefix))
    assert [c.id for c in reply.tool_calls] == [c.id for c in history[index].tool_calls]  # type: ignore[union-attr]
    history[index] = reply
    return history, reply


def without_caller(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn less the `caller` field the API adds to `tool_use` blocks."""
    blocks = [{k: v for k, v in b.items() if k != "caller"} for b in turn["content"]]
    return {**turn, "content": blocks}


@pytest.mark.parametrize(
    ("path", "thinking", "rebuilt"),
    [
        (RECORDINGS[0], False, False),
        (RECORDINGS[2], False, False),
        (RECORDINGS[1], True, False),
        # simonw/llm-anthropic rebuilt its reply turns: it dropped the `caller` field of each
        # `tool_use` block as the API sent it. We send the block as received.
        (RECORDINGS[6], False, True),
        (RECORDINGS[7], True, True),
    ],
)
def test_follow_up_requests_round_trip(path: str, thinking: bool, rebuilt: bool) -> None:
    """The recorded follow-up (thinking, text, calls, results) with its reply sent back as the
    API made it is what the real API accepted."""
    recorded = normalised(sent(path, 1)["messages"])
    history, reply = with_own_reply(path)
    ours = to_wire_messages(history, NO_NAMES, Target(HERE.endpoint, HERE.model, thinking))
    assert reply.native is not None
    assert ours[1]["content"] == reply.native.content
    assert [without_caller(turn) for turn in ours] == recorded
    assert (ours[1] != recorded[1]) is rebuilt


def test_whitespace_text_next_to_calls_is_dropped_on_replay() -> None:
    """F20: simonw/llm-anthropic replayed a " " text block; we send the calls alone (as the API
    sent them, `caller` included: that library dropped it)."""
    recorded = sent(RECORDINGS[4], 1)["messages"]
    assert recorded[1]["content"][0] == {"type": "text", "text": " "}
    history, _ = with_own_reply(RECORDINGS[4])
    ours = to_wire_messages(history, NO_NAMES, HERE)
    assert without_caller(ours[1])["content"] == recorded[1]["content"][1:]
    assert ours[2] == recorded[2]


def test_thinking_is_left_out_when_thinking_is_off() -> None:
    """F40: with thinking off, thinking blocks are left out (the API rejects them in a final
    assistant turn when thinking is disabled)."""
    history, _ = with_own_reply(RECORDINGS[7])
    ours = to_wire_messages(history, NO_NAMES, HERE)
    assert [b["type"] for b in ours[1]["content"]] == ["tool_use"]


def test_recorded_rejected_request_is_sent_valid_by_us() -> None:
    """F03: opencode's request (text after tool_use) got a real 400; the fake server gives the
    same text for it, and accepts what we make of the same history."""
    (interaction,) = load(RECORDINGS[11])
    assert validate(interaction.request) == interaction.body["error"]["message"]
    ours = to_wire_messages(history_from_request(interaction.request), NO_NAMES)
    assert validate({"messages": ours}) is None
    assert ours[1]["role"] == "assistant"
    assert [b["type"] for b in ours[1]["content"]] == ["text", "tool_use"]
    assert [b["type"] for b in ours[2]["content"]] == ["tool_result", "text"]


def test_recorded_result_with_a_mismatched_id_is_not_sent_as_an_orphan() -> None:
    """F01/F02: dd-trace's history answers toolu_01Ui... with a result for toolu_01DY...; we
    answer the call as not run and send the stray result as text."""
    history = history_from_request(sent(RECORDINGS[9], 0))
    ours = to_wire_messages(history, NO_NAMES)
    assert validate(sent(RECORDINGS[9], 0)) is not None
    assert validate({"messages": ours}) is None
    results, note = ours[2]["content"]
    assert results["tool_use_id"] == "toolu_01UiyhG7tywQKaqdgxyqa8z9"
    assert results["is_error"] is True
    assert "The weather is 73f" in note["text"]
