"""Real recorded Anthropic traffic through the adapter's parsers and serializer.

Replies (JSON and SSE) become the right canonical messages; error bodies the right errors;
and the follow-up requests in the recordings, rebuilt from canonical history, come out in the
same shape the real API accepted (F03, F14, F19, F20, F29, F38, F40, F41).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic_cassettes import (
    NO_NAMES,
    RECORDINGS,
    Interaction,
    history_from_request,
    load,
    normalised,
    sse_events,
)
from anthropic_fake_server import validate

from steadyloop.errors import ConfigError, ModelError
from steadyloop.events import TextDelta, ToolCallDelta
from steadyloop.messages import AssistantMessage, ToolCall
from steadyloop.models.anthropic import error_from_response
from steadyloop.models.anthropic_wire import StreamAssembler, parse_message, to_wire_messages


def reply_of(interaction: Interaction) -> AssistantMessage:
    """The canonical reply, through the stream assembler for SSE recordings."""
    if not interaction.streamed:
        return parse_message(interaction.body, NO_NAMES)
    assembler = StreamAssembler(NO_NAMES)
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
    plain = reply_of(load(RECORDINGS[1])[0])
    streamed = reply_of(load(RECORDINGS[7])[0])
    for reply in (plain, streamed):
        (reasoning,) = reply.reasoning
        assert reasoning.provider == "anthropic"
        assert reasoning.data["type"] == "thinking"
        assert str(reasoning.data["signature"]).startswith("E")
        assert len(str(reasoning.data["signature"])) > 300
        assert reply.tool_calls[0].arguments == "{}"
    assert str(streamed.reasoning[0].data["thinking"]).startswith("The user wants me to:\n1. Use")


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


@pytest.mark.parametrize(
    ("path", "thinking"),
    [
        (RECORDINGS[0], False),
        (RECORDINGS[2], False),
        (RECORDINGS[6], False),
        (RECORDINGS[7], True),
        (RECORDINGS[1], True),
    ],
)
def test_follow_up_requests_round_trip(path: str, thinking: bool) -> None:
    """The recorded follow-up (thinking, text, calls, results) rebuilt from canonical history
    is what the real API accepted."""
    recorded = sent(path, 1)["messages"]
    ours = to_wire_messages(
        history_from_request(sent(path, 1)), NO_NAMES, replay_reasoning=thinking
    )
    assert ours == normalised(recorded)


def test_whitespace_text_next_to_calls_is_dropped_on_replay() -> None:
    """F20: simonw/llm-anthropic replayed a " " text block; we send the calls alone."""
    recorded = sent(RECORDINGS[4], 1)["messages"]
    assert recorded[1]["content"][0] == {"type": "text", "text": " "}
    ours = to_wire_messages(
        history_from_request(sent(RECORDINGS[4], 1)), NO_NAMES, replay_reasoning=False
    )
    assert ours[1]["content"] == recorded[1]["content"][1:]
    assert ours[2] == recorded[2]


def test_thinking_is_left_out_when_thinking_is_off() -> None:
    """F40: with thinking off, thinking blocks are left out (the API rejects them in a final
    assistant turn when thinking is disabled)."""
    history = history_from_request(sent(RECORDINGS[7], 1))
    ours = to_wire_messages(history, NO_NAMES, replay_reasoning=False)
    assert [b["type"] for b in ours[1]["content"]] == ["tool_use"]


def test_recorded_rejected_request_is_sent_valid_by_us() -> None:
    """F03: opencode's request (text after tool_use) got a real 400; the fake server gives the
    same text for it, and accepts what we make of the same history."""
    (interaction,) = load(RECORDINGS[11])
    assert validate(interaction.request) == interaction.body["error"]["message"]
    ours = to_wire_messages(
        history_from_request(interaction.request), NO_NAMES, replay_reasoning=False
    )
    assert validate({"messages": ours}) is None
    assert ours[1]["role"] == "assistant"
    assert [b["type"] for b in ours[1]["content"]] == ["text", "tool_use"]
    assert [b["type"] for b in ours[2]["content"]] == ["tool_result", "text"]


def test_recorded_result_with_a_mismatched_id_is_not_sent_as_an_orphan() -> None:
    """F01/F02: dd-trace's history answers toolu_01Ui... with a result for toolu_01DY...; we
    answer the call as not run and send the stray result as text."""
    history = history_from_request(sent(RECORDINGS[9], 0))
    ours = to_wire_messages(history, NO_NAMES, replay_reasoning=False)
    assert validate(sent(RECORDINGS[9], 0)) is not None
    assert validate({"messages": ours}) is None
    results, note = ours[2]["content"]
    assert results["tool_use_id"] == "toolu_01UiyhG7tywQKaqdgxyqa8z9"
    assert results["is_error"] is True
    assert "The weather is 73f" in note["text"]
