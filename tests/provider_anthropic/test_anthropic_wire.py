"""The canonical <-> Anthropic mapping on its own: every rule checked against the fake server's
validator (the API's rules with their real error texts) and by the shape of the output."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from provider_anthropic.anthropic_fake_server import (
    message,
    stream_events,
    text,
    thinking,
    tool_use,
    validate,
)
from steadyloop.cache import Cache
from steadyloop.messages import (
    AssistantMessage,
    Image,
    Message,
    Native,
    Summary,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from steadyloop.models.anthropic_wire import (
    EMPTY_ASSISTANT_TEXT,
    Origin,
    StreamAssembler,
    Target,
    WireRequest,
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


def wire(messages: list[Message]) -> list[dict[str, Any]]:
    turns = to_wire_messages(messages, NAMES)
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


def test_consecutive_canonical_turns_of_one_role_are_merged_in_rule_order() -> None:
    """F03b: merged replies still end with the call."""
    turns = wire(
        [
            UserMessage("a"),
            UserMessage("b"),
            AssistantMessage("thinking aloud"),
            AssistantMessage("now the call", (CALL,)),
            ToolResult("toolu_1", "get_weather", "ok"),
        ]
    )
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert kinds(turns[0]) == ["text", "text"]
    assert kinds(turns[1]) == ["text", "text", "tool_use"]


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
    body = build_request(request, NAMES).body
    assert "system" not in body
    assert validate(body) is None
    (wire_tool,) = body["tools"]
    reply = parse_message(message(tool_use("toolu_9", wire_tool["name"], {})).message or {}, NAMES)
    assert reply.tool_calls[0].name == "calendar.lookup"


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
    body = build_request(ModelRequest("sys", tuple(history), specs), names).body
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
    origin = Origin(HERE.endpoint, HERE.model, "p")
    assembler = StreamAssembler(NAMES, origin)
    for event in stream_events(reply):
        assembler.feed(event)
    assert assembler.finished
    streamed = assembler.result()
    assert streamed == parse_message(reply, NAMES, origin)
    assert streamed.native is not None
    assert streamed.native.content == reply["content"]


# -- own replies, the thinking fallback, cache marks ----------------------------------------

HERE = Target("https://api.anthropic.com", "claude-fake", thinking=True)
SPEC = ToolSpec("get_weather", "the weather", {"type": "object"})
# A reply as the API sends it: empty thinking (display omitted), text blocks apart, redacted
# thinking between them, and a whitespace-only text block the API would refuse back.
RECEIVED = [
    thinking("", "SIG=="),
    text("Let me check."),
    {"type": "redacted_thinking", "data": "opaque"},
    text(" "),
    text("Calling now."),
    tool_use("toolu_1", "get_weather", {"city": "Paris"}),
]


def request(messages: list[Message], cache: Cache | None = None, system: str = "sys") -> Any:
    return ModelRequest(system, tuple(messages), (SPEC,), cache)


def answered(
    history: list[Message], content: list[dict[str, Any]], target: Target = HERE
) -> AssistantMessage:
    """The reply the API makes to `history`, parsed as the adapter does."""
    sent = build_request(request(history), NAMES, target)
    data = message(*content).message or {}
    return parse_message(data, NAMES, Origin(target.endpoint, target.model, sent.prefix))


def loop_after(reply: AssistantMessage) -> list[Message]:
    return [UserMessage("q"), reply, ToolResult("toolu_1", "get_weather", "sunny")]


def sent(messages: list[Message], target: Target = HERE, system: str = "sys") -> WireRequest:
    out = build_request(request(messages, system=system), NAMES, target)
    on = target.thinking and not out.thinking_off
    body = {**out.body, "thinking": {"type": "enabled" if on else "disabled"}}
    assert validate(body) is None
    return out


def thinking_blocks(out: WireRequest) -> list[dict[str, Any]]:
    turns = out.body["messages"]
    return [
        b for t in turns for b in t["content"] if b["type"] in ("thinking", "redacted_thinking")
    ]


def test_an_own_reply_goes_back_block_for_block() -> None:
    """Thinking with its signature (empty text too), redacted thinking, every text block apart,
    the call as received; only the whitespace-only block is left out."""
    reply = answered([UserMessage("q")], RECEIVED)
    assert reply.native is not None
    assert reply.native.content == RECEIVED
    out = sent(loop_after(reply))
    assert out.body["messages"][1]["content"] == [b for b in RECEIVED if b != text(" ")]
    assert out.thinking_off is False


def test_reasoning_text_joins_the_thinking_and_leaves_out_redacted_blocks() -> None:
    content = [thinking("first", "s1"), {"type": "redacted_thinking", "data": "x"}]
    reply = answered([UserMessage("q")], [*content, thinking("second", "s2"), text("ok")])
    assert reply.reasoning_text == "first\n\nsecond"
    assert reply.text == "ok"


def test_with_thinking_off_an_own_reply_goes_without_its_thinking() -> None:
    target = Target(HERE.endpoint, HERE.model, thinking=False)
    reply = answered([UserMessage("q")], RECEIVED, target)
    out = sent(loop_after(reply), target)
    assert kinds(out.body["messages"][1]) == ["text", "text", "tool_use"]


def test_a_reply_from_another_model_or_endpoint_goes_as_canonical_parts() -> None:
    """Its thinking never reaches the wire; with thinking on the loop falls back to none."""
    for other in (
        Target(HERE.endpoint, "claude-other", True),
        Target("http://proxy", "claude-fake"),
    ):
        reply = answered([UserMessage("q")], RECEIVED, other)
        out = sent(loop_after(reply))
        assert out.body["messages"][1]["content"] == [
            text("Let me check. Calling now."),
            tool_use("toolu_1", "get_weather", {"city": "Paris"}),
        ]
        assert out.thinking_off is True
        assert thinking_blocks(out) == []


def test_a_changed_prefix_sends_the_reply_canonical_and_thinking_off() -> None:
    """Other instructions, or a compaction summary before it: its thinking is bound to the old
    prefix, so it goes as canonical parts and the tool loop goes on without thinking."""
    reply = answered([UserMessage("q")], RECEIVED)
    assert sent(loop_after(reply)).thinking_off is False
    other_system = sent(loop_after(reply), system="other instructions")
    summary = Summary("they asked about the weather", replaced=2)
    after_summary = sent([UserMessage("q"), summary, *loop_after(reply)[1:]])
    for out in (other_system, after_summary):
        assert out.thinking_off is True
        assert thinking_blocks(out) == []
        assert kinds(out.body["messages"][-2]) == ["text", "tool_use"]


def test_the_fallback_drops_thinking_everywhere_but_keeps_earlier_own_turns() -> None:
    """An own reply earlier in the history goes without its thinking blocks, still unmerged."""
    first = answered([UserMessage("q")], RECEIVED)
    history: list[Message] = loop_after(first)
    foreign = AssistantMessage("", (ToolCall("toolu_2", "get_weather", "{}"),))
    history += [foreign, ToolResult("toolu_2", "get_weather", "rain")]
    out = sent(history)
    assert out.thinking_off is True
    assert thinking_blocks(out) == []
    assert kinds(out.body["messages"][1]) == ["text", "text", "tool_use"]


def test_a_new_prompt_after_the_loop_has_thinking_on_again() -> None:
    foreign = AssistantMessage("", (CALL,))
    history = [*loop_after(foreign), AssistantMessage("sunny"), UserMessage("and tomorrow?")]
    assert sent(history).thinking_off is False


def test_a_reply_whose_ids_changed_goes_canonical() -> None:
    reply = answered([UserMessage("q")], RECEIVED)
    renamed = AssistantMessage(
        reply.text, (ToolCall("toolu_1_2", "get_weather", "{}"),), native=reply.native
    )
    out = sent([UserMessage("q"), renamed, ToolResult("toolu_1_2", "get_weather", "ok")])
    assert out.thinking_off is True
    assert kinds(out.body["messages"][1]) == ["text", "tool_use"]


def test_a_reply_made_after_the_fallback_keeps_the_loop_without_thinking() -> None:
    foreign = AssistantMessage("", (CALL,))
    history = loop_after(foreign)
    made = build_request(request(history), NAMES, HERE)
    assert made.thinking_off
    data = message(tool_use("toolu_2", "get_weather", {})).message or {}
    reply = parse_message(data, NAMES, Origin(HERE.endpoint, HERE.model, made.prefix))
    out = sent([*history, reply, ToolResult("toolu_2", "get_weather", "ok")])
    assert out.thinking_off is True
    assert out.body["messages"][3]["content"] == [tool_use("toolu_2", "get_weather", {})]


MARK = {"type": "ephemeral"}


def marks(body: dict[str, Any]) -> list[str]:
    """Where the cache marks are: "system", "tool:NAME" or "turn:INDEX"."""
    found = [f"tool:{t['name']}" for t in body.get("tools", ()) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list) and any("cache_control" in b for b in system):
        found.append("system")
    for index, turn in enumerate(body["messages"]):
        for position, block in enumerate(turn["content"]):
            if "cache_control" in block:
                assert position == len(turn["content"]) - 1, "only a turn's last block"
                found.append(f"turn:{index}")
    return found


def test_default_marks_are_the_system_block_and_the_last_message() -> None:
    history = loop_after(AssistantMessage("", (CALL,)))
    body = build_request(request(history, Cache()), NAMES).body
    assert body["system"] == [{"type": "text", "text": "sys", "cache_control": MARK}]
    assert marks(body) == ["system", "turn:2"]
    assert validate(body) is None


def test_without_instructions_the_last_tool_takes_the_prefix_mark() -> None:
    body = build_request(request([UserMessage("q")], Cache(), system=""), NAMES).body
    assert "system" not in body
    assert marks(body) == ["tool:get_weather", "turn:0"]
    bare = build_request(ModelRequest(None, (UserMessage("q"),), (), Cache()), NAMES).body
    assert marks(bare) == ["turn:0"]


def test_more_user_turns_and_one_hour_marks() -> None:
    history = [*loop_after(AssistantMessage("", (CALL,))), AssistantMessage("ok"), UserMessage("n")]
    body = build_request(request(history, Cache(prefix="1h", messages=2)), NAMES).body
    assert marks(body) == ["system", "turn:2", "turn:4"]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["messages"][4]["content"][-1]["cache_control"] == MARK
    assert validate(body) is None


def test_no_cache_sends_no_marks_and_the_system_prompt_as_text() -> None:
    body = build_request(request([UserMessage("q")], None), NAMES).body
    assert body["system"] == "sys"
    assert marks(body) == []
    off = build_request(request([UserMessage("q")], Cache(prefix=False, messages=0)), NAMES).body
    assert off["system"] == "sys"
    assert marks(off) == []


def test_marks_never_change_the_prefix_an_own_reply_is_bound_to() -> None:
    """Request N+1 with marks moved to the newest turn still sends request N's reply as is."""
    first = ModelRequest("sys", (UserMessage("q"),), (SPEC,), Cache())
    made = build_request(first, NAMES, HERE)
    data = message(*RECEIVED).message or {}
    reply = parse_message(data, NAMES, Origin(HERE.endpoint, HERE.model, made.prefix))
    later = build_request(request(loop_after(reply), Cache()), NAMES, HERE)
    assert later.thinking_off is False
    assert kinds(later.body["messages"][1])[0] == "thinking"
    assert marks(later.body) == ["system", "turn:2"]


CACHES = st.builds(
    Cache,
    prefix=st.sampled_from([True, False, "1h"]),
    messages=st.integers(0, 3),
    ttl=st.sampled_from(["5m", "1h"]),
)


@settings(max_examples=200, deadline=None)
@given(histories(), CACHES, st.sampled_from(["sys", ""]))
def test_any_history_with_any_cache_is_sent_valid(
    history: list[Message], cache: Cache, system: str
) -> None:
    """Every `Cache` that can be made gives at most four breakpoints, none 1h after 5m."""
    body = build_request(request(history, cache, system), NAMES).body
    assert validate(body) is None, json.dumps(body)[:2000]


def test_native_is_kept_whole_through_the_log_format() -> None:
    reply = answered([UserMessage("q")], RECEIVED)
    again = AssistantMessage.from_dict(json.loads(json.dumps(reply.to_dict())))
    assert again == reply
    assert isinstance(again.native, Native)
    assert reply.native is not None
    assert again.native.prefix == reply.native.prefix
