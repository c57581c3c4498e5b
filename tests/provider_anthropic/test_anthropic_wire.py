"""The canonical <-> Anthropic mapping on its own: every rule checked against the fake server's
validator (the API's rules with their real error texts) and by the shape of the output."""

from __future__ import annotations

import json
from typing import Any

from anthropic_fake_server import message, stream_events, text, tool_use, validate
from hypothesis import given, settings
from hypothesis import strategies as st

from steadyloop.messages import (
    AssistantMessage,
    Image,
    Message,
    Reasoning,
    Summary,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from steadyloop.models.anthropic_wire import (
    EMPTY_ASSISTANT_TEXT,
    StreamAssembler,
    build_request,
    parse_message,
    parse_usage,
    to_wire_messages,
)
from steadyloop.models.base import ModelRequest
from steadyloop.models.wire import ToolNames
from steadyloop.tools import ToolSpec

NAMES = ToolNames(["get_weather", "calendar.lookup"])
CALL = ToolCall("toolu_1", "get_weather", '{"city": "Paris"}')


def wire(messages: list[Message], *, thinking: bool = False) -> list[dict[str, Any]]:
    turns = to_wire_messages(messages, NAMES, replay_reasoning=thinking)
    assert validate({"messages": turns}) is None
    return turns


def kinds(turn: dict[str, Any]) -> list[str]:
    return [block["type"] for block in turn["content"]]


def test_results_come_first_then_text_in_one_user_turn() -> None:
    """F03a: a note added after the results stays after them, in the same turn."""
    second = ToolCall("toolu_2", "get_weather", '{"city": "Rome"}')
    turns = wire(
        [
            UserMessage("weather?"),
            AssistantMessage("", (CALL, second)),
            ToolResult("toolu_1", "get_weather", "sunny"),
            ToolResult("toolu_2", "get_weather", "rain"),
            UserMessage("2 turns left"),
        ]
    )
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert kinds(turns[2]) == ["tool_result", "tool_result", "text"]


def test_text_goes_before_the_calls() -> None:
    """F03b, F19: text and calls of one reply stay together, text first."""
    turns = wire(
        [
            UserMessage("q"),
            AssistantMessage("Let me check.", (CALL,)),
            ToolResult("toolu_1", "get_weather", "ok"),
        ]
    )
    assert turns[1]["content"] == [
        text("Let me check."),
        tool_use("toolu_1", "get_weather", {"city": "Paris"}),
    ]


def test_consecutive_turns_of_one_role_are_merged_in_rule_order() -> None:
    """F40 with F03b: merged replies still start with thinking and end with the call."""
    thought = Reasoning("anthropic", {"type": "thinking", "thinking": "hm", "signature": "s"})
    turns = wire(
        [
            UserMessage("a"),
            UserMessage("b"),
            AssistantMessage("thinking aloud"),
            AssistantMessage("now the call", (CALL,), reasoning=(thought,)),
            ToolResult("toolu_1", "get_weather", "ok"),
        ],
        thinking=True,
    )
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert kinds(turns[0]) == ["text", "text"]
    assert kinds(turns[1]) == ["thinking", "text", "text", "tool_use"]
    assert validate({"messages": turns, "thinking": {"type": "enabled"}}) is None


def test_arguments_are_always_an_object() -> None:
    """F12/F13: invalid JSON and non-objects go out as {}, never as a raw string."""
    arguments: list[str | dict[str, str]] = ['{"city": "Pa', "null", "[1, 2]", '"x"', ""]
    arguments.append({"city": "Oslo"})
    calls = tuple(ToolCall(f"toolu_{i}", "get_weather", given) for i, given in enumerate(arguments))
    results = [ToolResult(c.id, c.name, "error", is_error=True) for c in calls]
    turns = wire([UserMessage("q"), AssistantMessage("", calls), *results])
    assert [b["input"] for b in turns[1]["content"]] == [{}, {}, {}, {}, {}, {"city": "Oslo"}]


def test_empty_and_whitespace_text_never_reaches_the_wire() -> None:
    """F20: blank user text and an empty reply become placeholders; blank text beside calls goes."""
    turns = wire(
        [
            UserMessage("first"),
            AssistantMessage(""),
            UserMessage("  \n"),
            AssistantMessage("\n\n", (CALL,)),
            ToolResult("toolu_1", "get_weather", "ok"),
        ]
    )
    assert turns[1]["content"] == [text(EMPTY_ASSISTANT_TEXT)]
    assert kinds(turns[3]) == ["tool_use"]
    assert all(b["text"].strip() for t in turns for b in t["content"] if b["type"] == "text")


def test_results_without_text_are_still_sent() -> None:
    """F29: an empty result keeps its block (no content); images ride inside the result."""
    picture = Image("image/png", "iVBORw0KGgo=")
    second = ToolCall("toolu_2", "get_weather", "{}")
    turns = wire(
        [
            UserMessage("q"),
            AssistantMessage("", (CALL, second)),
            ToolResult("toolu_1", "get_weather", ""),
            ToolResult("toolu_2", "get_weather", "a chart", is_error=False, images=(picture,)),
        ]
    )
    empty, with_image = turns[2]["content"]
    assert empty == {"type": "tool_result", "tool_use_id": "toolu_1"}
    assert with_image["content"] == [
        text("a chart"),
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
    ]


def test_error_results_carry_is_error() -> None:
    """F44: an error result is marked so the model reads it as a failure."""
    turns = wire(
        [
            UserMessage("q"),
            AssistantMessage("", (CALL,)),
            ToolResult("toolu_1", "get_weather", "boom", is_error=True),
        ]
    )
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True}
    ]


def test_summary_is_user_text_and_history_starting_with_a_reply_gets_a_user_turn() -> None:
    summary = Summary("they asked about Paris", replaced=4)
    turns = wire([AssistantMessage("hello"), summary, UserMessage("and now?")])
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[2]["content"][0] == text(summary.note)


def test_foreign_names_are_mapped_and_mapped_back() -> None:
    """F25: a dotted tool name goes out valid and comes back as the tool's own name."""
    spec = ToolSpec("calendar.lookup", "free slots", {"type": "object", "properties": {}})
    request = ModelRequest(" ", (UserMessage("q"),), (spec,))
    body = build_request(request, NAMES, replay_reasoning=False)
    assert "system" not in body
    assert validate(body) is None
    (wire_tool,) = body["tools"]
    reply = parse_message(message(tool_use("toolu_9", wire_tool["name"], {})).message or {}, NAMES)
    assert reply.tool_calls[0].name == "calendar.lookup"


def test_reasoning_from_another_provider_is_not_replayed() -> None:
    mine = Reasoning("anthropic", {"type": "redacted_thinking", "data": "opaque"})
    theirs = Reasoning("openai-responses", {"type": "reasoning", "id": "rs_1"})
    reply = AssistantMessage("", (CALL,), reasoning=(theirs, mine))
    turns = wire(
        [UserMessage("q"), reply, ToolResult("toolu_1", "get_weather", "ok")], thinking=True
    )
    assert turns[1]["content"][0] == {"type": "redacted_thinking", "data": "opaque"}
    assert kinds(turns[1]) == ["redacted_thinking", "tool_use"]


def test_usage_counts_the_whole_prompt() -> None:
    usage = parse_usage(
        {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 20,
        }
    )
    assert usage == Usage(
        input_tokens=130, output_tokens=5, requests=1, cache_read_tokens=100, cache_write_tokens=20
    )
    assert parse_usage(None) is None


def test_other_stop_reasons_keep_the_providers_word() -> None:
    for stop in ("pause_turn", "refusal", "stop_sequence"):
        reply = parse_message(message(text("x"), stop_reason=stop).message or {}, NAMES)
        assert reply.stop_reason == stop


def test_delta_without_block_start_still_builds_the_call() -> None:
    assembler = StreamAssembler(NAMES)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3}}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'},
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    ]
    for event in events:
        assembler.feed(event)
    assert assembler.result().tool_calls[0].arguments == '{"a": 1}'


def test_arguments_cut_mid_json_are_kept_raw_for_dispatch() -> None:
    """F18: a call cut by max_tokens keeps its broken text; the loop never runs it."""
    assembler = StreamAssembler(NAMES)
    start = tool_use("toolu_c", "get_weather")
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": start},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Pa'},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "max_tokens"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    for event in events:
        assembler.feed(event)
    reply = assembler.result()
    assert reply.stop_reason == "max_tokens"
    assert reply.tool_calls[0].arguments == '{"city": "Pa'


# -- properties ---------------------------------------------------------------------------

IDS = st.sampled_from(["toolu_1", "toolu_1", "call_a|fc_b", "functions.x:0", "", "x" * 70, "ok-id"])
TEXTS = st.sampled_from(["", " ", "\n\n", "hello", "  padded  "])
ARGUMENTS = st.sampled_from(['{"a": 1}', "", "null", "[1]", '{"a": ', "{}"])
CALLS = st.lists(
    st.builds(
        ToolCall, IDS, st.sampled_from(["get_weather", "calendar.lookup", "bad name!"]), ARGUMENTS
    ),
    max_size=3,
)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Histories a transcript may hold after interrupts, trims and cross-provider replays."""
    messages: list[Message] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["user", "reply", "result", "summary"]))
        if kind == "user":
            messages.append(UserMessage(draw(TEXTS)))
        elif kind == "summary":
            messages.append(Summary(draw(TEXTS), replaced=1))
        elif kind == "reply":
            messages.append(AssistantMessage(draw(TEXTS), tuple(draw(CALLS))))
        else:
            messages.append(ToolResult(draw(IDS), "get_weather", draw(TEXTS), draw(st.booleans())))
    return messages


@settings(max_examples=300, deadline=None)
@given(histories())
def test_any_history_is_sent_valid(history: list[Message]) -> None:
    """F01, F02, F03, F09, F10, F13, F20, F22, F23, F24, F25: whatever the transcript holds,
    the request passes every rule the fake server enforces."""
    specs = tuple(
        ToolSpec(n, "", {"type": "object"}) for n in ("get_weather", "calendar.lookup", "bad name!")
    )
    names = ToolNames(spec.name for spec in specs)
    body = build_request(ModelRequest("sys", tuple(history), specs), names, replay_reasoning=False)
    assert validate(body) is None, json.dumps(body)[:2000]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["text", "call", "thinking"]), min_size=1, max_size=4),
    st.sampled_from(["end_turn", "tool_use", "max_tokens"]),
)
def test_streamed_and_plain_replies_parse_the_same(order: list[str], stop: str) -> None:
    """F38: the SSE path and the JSON path give the same canonical reply."""
    blocks = []
    for index, kind in enumerate(order):
        if kind == "text":
            blocks.append(text(f"part {index} of the answer"))
        elif kind == "call":
            blocks.append(
                tool_use(
                    f"toolu_{index}", "get_weather", {"city": f"c{index}"} if index % 2 else {}
                )
            )
        else:
            blocks.append(
                {"type": "thinking", "thinking": f"step {index}", "signature": f"sig{index}"}
            )
    reply = message(*blocks, stop_reason=stop).message or {}
    assembler = StreamAssembler(NAMES)
    for event in stream_events(reply):
        assembler.feed(event)
    assert assembler.finished
    assert assembler.result() == parse_message(reply, NAMES)
