"""Real recorded OpenAI Chat, Responses and OpenAI-compatible traffic through the adapters.

Every OpenAI-protocol recording in `tests/fixtures/provider-cassettes/` goes through the
same parsers the live adapters use; each reply must come out as the right canonical message
(count, ids, names, arguments, text, stop reason, usage) and each error as the right error.
Multi-turn recordings are also replayed the other way: the history built from the parsed replies
and the recorded tool results must serialise to the same conversation the next recorded request
sent (pairing, order, reasoning items).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from provider_openai.openai_cassettes import CASSETTES, Interaction, load
from provider_openai.openai_replay import (
    CHAT,
    HINT,
    RESPONSES,
    parse_chat,
    parse_responses,
    tool_names,
)
from steadyloop.errors import ConfigError, ContextWindowExceeded, ModelError, SteadyloopError
from steadyloop.events import TextDelta, ToolCallDelta
from steadyloop.messages import AssistantMessage, Message, ToolResult, UserMessage
from steadyloop.models.base import ModelRequest
from steadyloop.models.openai_base import Origin, error_from_body
from steadyloop.models.openai_chat import CHAT_IDS, ChatStreamParser, chat_messages
from steadyloop.models.openai_responses import ResponsesStreamParser, responses_input
from steadyloop.models.wire import ToolNames

if not CASSETTES.is_dir():  # pragma: no cover - an empty folder would cover nothing
    pytest.fail(f"provider cassettes not found at {CASSETTES}", pytrace=False)

Call = tuple[str, str, Any]  # id, name, arguments (parsed when JSON)


def calls_of(reply: AssistantMessage) -> list[Call]:
    out: list[Call] = []
    for call in reply.tool_calls:
        args = call.arguments
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        out.append((call.id, call.name, args))
    return out


# file, interaction, text (prefix), calls, stop reason, (input, output, cached) tokens or None
CHAT_REPLIES: list[tuple[str, int, str, list[Call], str, tuple[int, int, int] | None]] = [
    (
        "pydantic-ai/test_openai/test_openai_tool_output.yaml",
        0,
        "",
        [("call_iXFttys57ap0o16JSlC8yhYo", "get_user_country", {})],
        "tool_use",
        (68, 12, 0),
    ),
    (
        "pydantic-ai/test_openai/test_openai_tool_output.yaml",
        1,
        "",
        [
            (
                "call_gmD2oUZUzSoCkmNmp3JPUF7R",
                "final_result",
                {"city": "Mexico City", "country": "Mexico"},
            )
        ],
        "tool_use",
        (89, 36, 0),
    ),
    (
        "pydantic-ai/test_openai/test_multiple_agent_tool_calls.yaml",
        2,
        "",
        [("call_SkEQ3ZGSJC8m6AvaIGNuuKdm", "get_capital", {"country": "England"})],
        "tool_use",
        (104, 16, 0),
    ),
    (
        "pydantic-ai/test_openai/test_multiple_agent_tool_calls.yaml",
        3,
        "The capital of England is London.",
        [],
        "end_turn",
        (129, 9, 0),
    ),
    # Gemini's OpenAI-compatible endpoint: an empty call id (F23)
    (
        "pydantic-ai/test_openai/test_compatible_api_with_tool_calls_without_id.yaml",
        0,
        "",
        [("", "get_current_time", {})],
        "tool_use",
        (35, 12, 0),
    ),
    (
        "pydantic-ai/test_openai/test_compatible_api_with_tool_calls_without_id.yaml",
        1,
        "The current time is Noon.",
        [],
        "end_turn",
        (66, 6, 0),
    ),
    # Groq: two parallel calls with short non-OpenAI ids, no `content` field
    (
        "pydantic-ai/test_tool_choice_matrix/test_tool_choice_matrix[tools_plus_output-groq].yaml",
        0,
        "",
        [
            ("rew01jq49", "get_weather", {"city": "Paris"}),
            ("gbpypqxpx", "final_result", {"city": "Paris", "summary": "Current weather in Paris"}),
        ],
        "tool_use",
        (779, 65, 0),
    ),
    (
        "pydantic-ai/test_groq/test_tool_use_failed_error.yaml",
        2,
        "The first call failed due to missing and extra parameters",
        [],
        "end_turn",
        (336, 96, 256),
    ),
    # HF router: `tool_calls: []` is no call (F21), `length` is max_tokens (F41)
    (
        "pydantic-ai/test_huggingface/test_max_completion_tokens.yaml",
        0,
        '<think>\nHmm, the user just said "hello".',
        [],
        "max_tokens",
        (4, 100, 0),
    ),
    (
        "simonw-llm/test_tools/test_tool_use_chain_of_two_calls.yaml",
        0,
        "",
        [("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", {"country": "Crumpet"})],
        "tool_use",
        (92, 17, 0),
    ),
    (
        "simonw-llm/test_tools/test_tool_use_chain_of_two_calls.yaml",
        1,
        "",
        [("call_aq9UyiSFkzX6W8Ydc33DoI9Y", "can_have_dragons", {"population": 123124})],
        "tool_use",
        (118, 18, 0),
    ),
    ("simonw-llm/test_tools/test_tool_use_chain_of_two_calls.yaml", 2, "YES", [], "end_turn", None),
    # SSE: arguments in five fragments, usage-only last chunk
    (
        "pydantic-ai/test_openai/test_run_stream_sync_streams_real_model.yaml",
        0,
        "",
        [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", {"country": "UK"})],
        "tool_use",
        (53, 15, 0),
    ),
    (
        "pydantic-ai/test_openai/test_run_stream_sync_streams_real_model.yaml",
        1,
        "The capital of the UK is London.",
        [],
        "end_turn",
        (78, 9, 0),
    ),
    # F38 variants: id repeated with arguments '' then '{}', no finish_reason (a, b)
    (
        "simonw-llm/test_tools_streaming/test_tools_streaming_variant_a.yaml",
        0,
        "",
        [("0", "llm_version", {})],
        "tool_use",
        (57, 17, 0),
    ),
    (
        "simonw-llm/test_tools_streaming/test_tools_streaming_variant_a.yaml",
        1,
        "The current version of *llm* is **0.fixed-version**.",
        [],
        "end_turn",
        (107, 15, 0),
    ),
    (
        "simonw-llm/test_tools_streaming/test_tools_streaming_variant_b.yaml",
        0,
        "",
        [("0", "llm_version", {})],
        "tool_use",
        (57, 17, 0),
    ),
    # name-only first chunk, arguments without id, an id with ':' (c)
    (
        "simonw-llm/test_tools_streaming/test_tools_streaming_variant_c.yaml",
        0,
        "",
        [("llm_version:0", "llm_version", {})],
        "tool_use",
        (56, 12, 0),
    ),
    (
        "simonw-llm/test_tools_streaming/test_tools_streaming_variant_c.yaml",
        1,
        "The installed version of LLM on this system is 0.fixed-version.",
        [],
        "end_turn",
        (105, 16, 0),
    ),
    # `arguments: null` and nothing else: empty arguments, left to dispatch (F14) (d)
    (
        "simonw-llm/test_tools_streaming/test_tools_streaming_variant_d.yaml",
        0,
        "",
        [("0", "llm_version", "")],
        "tool_use",
        (57, 17, 0),
    ),
    # Groq: the whole call in one chunk, usage in two places
    (
        "opencode/openai-compatible-chat/groq-streams-tool-call.json",
        0,
        "",
        [("mcf2d8nn1", "get_weather", {"city": "Paris"})],
        "tool_use",
        (249, 10, 0),
    ),
    # llama.cpp: a 56-character id (F24); arguments cut by max_tokens while the server says
    # "tool_calls" (F18): kept raw, so dispatch answers them as invalid JSON and never runs them
    (
        "llama-cpp-python-local/chat_forced_tool_call_truncated_by_max_tokens.json",
        0,
        "",
        [
            (
                "call__0_get_weather_cmpl-2bd30aec-8407-4c2b-b4cb-694afc1db4a9",
                "get_weather",
                '{ "cit',
            )
        ],
        "tool_use",
        (83, 6, 0),
    ),
    # llama.cpp ignores include_usage: a finish_reason alone ends the stream
    (
        "llama-cpp-python-local/chat_text_stream_include_usage_ignored.json",
        0,
        "{W>W",
        [],
        "max_tokens",
        None,
    ),
    (
        "llama-cpp-python-local/lenient_orphan_tool_message_accepted.json",
        0,
        "(*",
        [],
        "max_tokens",
        None,
    ),
]

RESPONSES_REPLIES: list[tuple[str, int, str, list[Call], str, tuple[int, int, int] | None]] = [
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml",
        0,
        "",
        [("call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", {"country": "PotatoLand"})],
        "tool_use",
        (40, 18, 0),
    ),
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml",
        1,
        "The capital of PotatoLand is Potato City.",
        [],
        "end_turn",
        (67, 11, 0),
    ),
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_model_retry.yaml",
        0,
        "",
        [
            ("call_LWVp74L5HaH2KNvgVz9PJsrj", "get_location", {"loc_name": "Londos"}),
            ("call_YnRAWeTyxI91m5uNa5bxXwVO", "get_location", {"loc_name": "London"}),
        ],
        "tool_use",
        None,
    ),
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml",
        0,
        "",
        [("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", {"country": "France"})],
        "tool_use",
        (255, 16, 0),
    ),
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml",
        1,
        "The capital of France is Paris.",
        [],
        "end_turn",
        (278, 9, 0),
    ),
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_thinking_with_modified_history.yaml",
        0,
        "A single, final answer doesn",
        [],
        "end_turn",
        (13, 248, 0),
    ),
    (
        "simonw-llm/test_openai_responses/test_responses_tool_use_streaming.yaml",
        0,
        "",
        [("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", {"a": 1231, "b": 2331})],
        "tool_use",
        (58, 23, 0),
    ),
    (
        "simonw-llm/test_openai_responses/test_responses_tool_use_streaming.yaml",
        1,
        "1231 \u00d7 2331 = **2,869,461**",
        [],
        "end_turn",
        (94, 18, 0),
    ),
    (
        "dd-trace-py/openai/v1/response_function_call_streamed.yaml",
        0,
        "",
        [
            (
                "call_lGe2JKQEBSP15opZ3KfxtEUC",
                "get_current_weather",
                {"location": "Boston, MA", "unit": "celsius"},
            )
        ],
        "tool_use",
        (75, 23, 0),
    ),
    # `response.incomplete` with max_output_tokens: a cut answer, never reported complete (F41)
    (
        "dd-trace-py/openai/v1/response_stream_incomplete.yaml",
        0,
        "In the bustling city of Detroit",
        [],
        "max_tokens",
        None,
    ),
]


def check_reply(
    reply: AssistantMessage,
    text: str,
    calls: list[Call],
    stop: str,
    tokens: tuple[int, int, int] | None,
) -> None:
    assert reply.text.startswith(text)
    if not text:
        assert reply.text == ""
    assert calls_of(reply) == calls
    assert reply.stop_reason == stop
    if tokens is not None:
        assert reply.usage is not None
        usage = reply.usage
        assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == tokens


@pytest.mark.parametrize(("path", "index", "text", "calls", "stop", "tokens"), CHAT_REPLIES)
def test_chat_recordings_parse_to_canonical_replies(
    path: str,
    index: int,
    text: str,
    calls: list[Call],
    stop: str,
    tokens: tuple[int, int, int] | None,
) -> None:
    check_reply(parse_chat(load(path)[index]), text, calls, stop, tokens)


@pytest.mark.parametrize(("path", "index", "text", "calls", "stop", "tokens"), RESPONSES_REPLIES)
def test_responses_recordings_parse_to_canonical_replies(
    path: str,
    index: int,
    text: str,
    calls: list[Call],
    stop: str,
    tokens: tuple[int, int, int] | None,
) -> None:
    check_reply(parse_responses(load(path)[index]), text, calls, stop, tokens)


def test_llama_cpp_stream_repeating_id_and_name_assembles_one_call() -> None:
    """Every chunk repeats the 56-character id and the name with a new fragment (F38)."""
    recording = load("llama-cpp-python-local/chat_forced_tool_call_stream.json")[0]
    fragments = [
        tc["function"]["arguments"]
        for chunk in recording.sse_data()
        for tc in chunk["choices"][0]["delta"].get("tool_calls") or ()
    ]
    assert len(fragments) > 5
    reply = parse_chat(recording)
    [call] = reply.tool_calls
    assert call.id == "call__0_get_weather_cmpl-799cd1e9-e998-41b6-b40d-c0233679dece"
    assert call.name == "get_weather"
    assert call.arguments == "".join(fragments)
    assert reply.stop_reason == "tool_use"


def test_stream_deltas_add_up_to_the_final_reply() -> None:
    """What `Agent.stream` shows while a reply streams is exactly the reply it ends with."""
    for path in (
        "pydantic-ai/test_openai/test_run_stream_sync_streams_real_model.yaml",
        "simonw-llm/test_tools_streaming/test_tools_streaming_variant_a.yaml",
        "simonw-llm/test_tools_streaming/test_tools_streaming_variant_c.yaml",
    ):
        for recording in load(path):
            parser = ChatStreamParser(tool_names(recording), "openai:test", HINT)
            parts = [p for chunk in recording.sse_data() for p in parser.feed(chunk)]
            check_deltas(parts, parser.finish())
    for path in (
        "pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml",
        "simonw-llm/test_openai_responses/test_responses_tool_use_streaming.yaml",
    ):
        for recording in load(path):
            rparser = ResponsesStreamParser(tool_names(recording), "openai-responses:x", HINT)
            parts = [p for event in recording.sse_data() for p in rparser.feed(event)]
            check_deltas(parts, rparser.finish())


def check_deltas(parts: Sequence[TextDelta | ToolCallDelta], reply: AssistantMessage) -> None:
    assert "".join(p.text for p in parts if isinstance(p, TextDelta)) == reply.text
    for index, call in enumerate(reply.tool_calls):
        mine = [p for p in parts if isinstance(p, ToolCallDelta) and p.index == index]
        assert [p.id for p in mine if p.id] == [call.id]
        assert [p.name for p in mine if p.name] == [call.name]
        assert "".join(p.arguments for p in mine) == call.arguments


def test_stream_cut_mid_call_is_a_retryable_error_not_a_reply() -> None:
    """A stream that ends inside the arguments (no finish_reason, no usage) is retried (F37)."""
    recording = load("pydantic-ai/test_openai/test_run_stream_sync_streams_real_model.yaml")[0]
    chunks = recording.sse_data()
    parser = ChatStreamParser(tool_names(recording), "openai:test", HINT)
    for chunk in chunks[:4]:
        parser.feed(chunk)
    with pytest.raises(ModelError) as info:
        parser.finish()
    assert info.value.retryable

    rec = load("pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml")[0]
    events = rec.sse_data()
    rparser = ResponsesStreamParser(tool_names(rec), "openai-responses:test", HINT)
    for event in events[:5]:
        rparser.feed(event)
    with pytest.raises(ModelError) as rinfo:
        rparser.finish()
    assert rinfo.value.retryable


def test_error_object_inside_a_200_stream_raises_instead_of_answering() -> None:
    """OpenRouter sends `error` in the last chunk of a 200 stream (F36)."""
    recording = load("pydantic-ai/test_openrouter/test_openrouter_stream_error.yaml")[0]
    assert recording.status == 200
    with pytest.raises(ModelError, match="Token limit reached") as info:
        parse_chat(recording)
    assert not info.value.retryable


# file, interaction, error class, retryable, context limit
ERROR_RECORDINGS: list[tuple[str, int, type[SteadyloopError], bool, int | None]] = [
    ("dd-trace-py/openai/v1/response_error.yaml", 0, ConfigError, False, None),
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_model_http_error.yaml",
        0,
        ModelError,
        False,
        None,
    ),
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_thinking_with_modified_history.yaml",
        1,
        ModelError,
        False,
        None,
    ),
    (
        "pydantic-ai/test_deepseek_responses/test_deepseek_responses_rejects_interleaved_function_calls.yaml",
        0,
        ModelError,
        False,
        None,
    ),
    ("pydantic-ai/test_openrouter/test_openrouter_errors_raised.yaml", 0, ModelError, True, None),
    ("pydantic-ai/test_groq/test_tool_use_failed_error.yaml", 0, ModelError, True, None),
    (
        "llama-cpp-python-local/error_context_length_exceeded.json",
        0,
        ContextWindowExceeded,
        False,
        2048,
    ),
    # a 500 that is really a validation error is not retried (F42)
    (
        "llama-cpp-python-local/error_assistant_content_null_with_tool_calls.json",
        0,
        ModelError,
        False,
        None,
    ),
    (
        "llama-cpp-python-local/error_assistant_content_missing_with_tool_calls.json",
        0,
        ModelError,
        False,
        None,
    ),
]


@pytest.mark.parametrize(("path", "index", "error", "retryable", "limit"), ERROR_RECORDINGS)
def test_error_recordings_map_to_steadyloop_errors(
    path: str, index: int, error: type[SteadyloopError], retryable: bool, limit: int | None
) -> None:
    recording = load(path)[index]
    parse = parse_responses if recording.url.endswith("/responses") else parse_chat
    with pytest.raises(error) as info:
        parse(recording)
    assert type(info.value) is error
    if isinstance(info.value, ModelError):
        assert info.value.retryable is retryable
        assert info.value.status == recording.status
    if isinstance(info.value, ContextWindowExceeded):
        assert info.value.limit == limit
    if error is ConfigError:
        assert "OPENAI_API_KEY" in str(info.value)


# transcribed error bodies (id in the file) -> error class, retryable, limit (F34, F35)
TRANSCRIBED: dict[str, tuple[type[SteadyloopError], bool, int | None]] = {
    "openai-chat-missing-tool-messages": (ModelError, False, None),
    "openai-chat-orphan-tool-message": (ModelError, False, None),
    "openai-chat-context-length": (ContextWindowExceeded, False, 8192),
    "openai-chat-empty-tool-calls": (ModelError, False, None),
    "openai-chat-tool-call-id-too-long": (ModelError, False, None),
    "openai-tool-name-pattern": (ModelError, False, None),
    "openai-rate-limit-tpm": (ModelError, True, None),
    "openai-request-too-large-tpm": (ModelError, False, None),
    "openai-responses-context-length-stream": (ContextWindowExceeded, False, None),
    "openai-responses-no-tool-output": (ModelError, False, None),
    "openai-responses-missing-reasoning-item": (ModelError, False, None),
    "openai-responses-duplicate-item": (ModelError, False, None),
    "llamacpp-server-context": (ContextWindowExceeded, False, 262144),
    "openrouter-context": (ContextWindowExceeded, False, 32768),
}


def transcribed_bodies() -> dict[str, Mapping[str, Any]]:
    data = json.loads((CASSETTES / "transcribed/provider-error-bodies.json").read_text())
    return {entry["id"]: entry for entry in data["entries"]}


@pytest.mark.parametrize("entry_id", sorted(TRANSCRIBED))
def test_transcribed_error_bodies_map_once(entry_id: str) -> None:
    entry = transcribed_bodies()[entry_id]
    error, retryable, limit = TRANSCRIBED[entry_id]
    status = entry["http_status"] if entry["transport"] == "http" else None
    body = entry["body"]
    if entry["transport"] == "sse":
        body = json.loads(body)  # the data payload of the streamed `error` event
    result = error_from_body(body, status=status, provider="openai:test", hint=HINT)
    assert type(result) is error
    assert isinstance(result, ModelError)
    assert result.retryable is retryable
    if isinstance(result, ContextWindowExceeded):
        assert result.limit == limit


def test_every_openai_protocol_recording_is_covered() -> None:
    """No OpenAI-protocol recording in the fixtures escapes the tables above."""
    covered = {p for p, *_ in CHAT_REPLIES + RESPONSES_REPLIES + ERROR_RECORDINGS}
    covered |= {
        "llama-cpp-python-local/chat_forced_tool_call_stream.json",
        "llama-cpp-python-local/chat_forced_tool_call.json",
        "llama-cpp-python-local/ok_assistant_content_empty_string_with_tool_calls.json",
        "pydantic-ai/test_openrouter/test_openrouter_stream_error.yaml",
        "simonw-llm/test_openai_responses/test_responses_interleaved_reasoning_between_tool_calls.yaml",
    }
    found = {
        str(p.relative_to(CASSETTES))
        for p in CASSETTES.rglob("*")
        if p.suffix in (".yaml", ".json") and "anthropic" not in p.parts[-2] + p.name
    } - {"transcribed/provider-error-bodies.json"}
    assert found - covered == set()


# -- the other way: canonical history -> the wire, against what the next request sent ---------


def replay_history(
    recordings: list[Interaction],
    parse: Callable[[Interaction], AssistantMessage],
    results: Callable[[Mapping[str, Any]], list[str]],
) -> list[tuple[list[Message], Mapping[str, Any]]]:
    """For each recorded follow-up request: the canonical history that should produce it."""
    first = recordings[0].request
    history: list[Message] = [UserMessage(_first_user_text(first))]
    out: list[tuple[list[Message], Mapping[str, Any]]] = []
    for previous, following in itertools.pairwise(recordings):
        reply = parse(previous)
        history.append(reply)
        # the recorded results of this reply's calls are the last ones sent, in call order
        # (paired by position: recorders rewrote some ids, e.g. Gemini's empty one)
        answers = results(following.request)[-len(reply.tool_calls) :] if reply.tool_calls else []
        history.extend(
            ToolResult(c.id, c.name, a) for c, a in zip(reply.tool_calls, answers, strict=True)
        )
        out.append((list(history), following.request))
    return out


def _first_user_text(body: Mapping[str, Any]) -> str:
    items = body.get("messages") or body.get("input") or ()
    return next(str(m["content"]) for m in items if m.get("role") == "user")


def _chat_results(body: Mapping[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def _responses_results(body: Mapping[str, Any]) -> list[str]:
    return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]


def chat_shape(messages: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """What matters in a Chat history: roles, texts, calls and their pairing (ids by order)."""
    ids: dict[str, int] = {}
    shape: list[tuple[Any, ...]] = []
    for m in messages:
        if m["role"] == "assistant":
            calls = tuple(
                (
                    ids.setdefault(c["id"], len(ids)),
                    c["function"]["name"],
                    json.loads(c["function"]["arguments"] or "{}"),
                )
                for c in m.get("tool_calls") or ()
            )
            if m.get("content") or calls:
                shape.append(("assistant", m.get("content") or "", calls))
        elif m["role"] == "tool":
            shape.append(("tool", ids[m["tool_call_id"]], m["content"]))
        elif m["role"] == "user":
            shape.append(("user", m["content"]))
    return shape


CHAT_CONVERSATIONS = [
    "simonw-llm/test_tools/test_tool_use_chain_of_two_calls.yaml",
    "pydantic-ai/test_openai/test_run_stream_sync_streams_real_model.yaml",
    "pydantic-ai/test_openai/test_compatible_api_with_tool_calls_without_id.yaml",
    "pydantic-ai/test_openai/test_openai_tool_output.yaml",
    "simonw-llm/test_tools_streaming/test_tools_streaming_variant_a.yaml",
    "simonw-llm/test_tools_streaming/test_tools_streaming_variant_c.yaml",
    "simonw-llm/test_tools_streaming/test_tools_streaming_variant_d.yaml",
]


@pytest.mark.parametrize("path", CHAT_CONVERSATIONS)
def test_chat_history_serialises_like_the_recorded_follow_up(path: str) -> None:
    """Calls and results paired by id (F04), the endpoint's own ids kept as it made them and
    only an empty one replaced (F23), `content: ""` beside tool calls (F42), no empty
    `tool_calls` (F21)."""
    for history, recorded in replay_history(load(path), parse_chat, _chat_results):
        request = ModelRequest(None, tuple(history), ())
        sent = chat_messages(request, ToolNames(()), origin=CHAT)
        assert chat_shape(sent) == chat_shape(recorded["messages"])
        made = [c.id for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls]
        wire = [c["id"] for m in sent for c in m.get("tool_calls", ())]
        assert len(wire) == len(made)
        for original, call_id in zip(made, wire, strict=True):
            assert call_id == original or (original == "" and CHAT_IDS.accepts(call_id))
        for message in sent:
            if message["role"] == "assistant":
                assert message["content"] is not None
                assert message.get("tool_calls", [None]) != []
                for call in message.get("tool_calls", ()):
                    json.loads(call["function"]["arguments"])


def test_empty_call_id_is_replaced_consistently_in_call_and_result() -> None:
    """Gemini sent id ''; the wire gets one valid id used by both the call and its result."""
    path = "pydantic-ai/test_openai/test_compatible_api_with_tool_calls_without_id.yaml"
    recordings = load(path)
    reply = parse_chat(recordings[0])
    history = (
        UserMessage("What is the current time?"),
        reply,
        ToolResult("", "get_current_time", "Noon"),
    )
    sent = chat_messages(ModelRequest(None, history, ()), ToolNames(()), origin=CHAT)
    call_id = sent[1]["tool_calls"][0]["id"]
    assert call_id
    assert CHAT_IDS.accepts(call_id)
    assert sent[2] == {"role": "tool", "tool_call_id": call_id, "content": "Noon"}
    again = chat_messages(ModelRequest(None, history, ()), ToolNames(()), origin=CHAT)
    assert again == sent  # deterministic


def test_gemini_thought_signature_goes_back_where_it_came_and_only_there() -> None:
    """Gemini's reply carried its thought signature in the message's `extra_content`: the
    follow-up to the same endpoint and model sends it back unchanged (the recording's library
    rebuilt the turn without it); to another model the reply goes as text and calls only."""
    path = "pydantic-ai/test_openai/test_compatible_api_with_tool_calls_without_id.yaml"
    recordings = load(path)
    reply = parse_chat(recordings[0])
    received = recordings[0].json()["choices"][0]["message"]["extra_content"]
    assert reply.native is not None
    assert reply.native.content["extra_content"] == received
    history = (
        UserMessage("What is the current time?"),
        reply,
        ToolResult("", "get_current_time", "Noon"),
    )
    request = ModelRequest(None, history, ())
    sent = chat_messages(request, ToolNames(()), origin=CHAT)
    assert sent[1]["extra_content"] == received
    assert "extra_content" not in recordings[1].request["messages"][1]
    another = Origin(CHAT.api, CHAT.endpoint, "gemini-3-pro")
    assert "extra_content" not in chat_messages(request, ToolNames(()), origin=another)[1]


RESPONSES_CONVERSATIONS = [
    "pydantic-ai/test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml",
    "pydantic-ai/test_openai_responses/test_openai_responses_model_retry.yaml",
    "pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml",
    "simonw-llm/test_openai_responses/test_responses_tool_use_streaming.yaml",
]


def responses_shape(items: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """What matters in Responses input: items, texts, calls and their pairing by call_id."""
    ids: dict[str, int] = {}
    shape: list[tuple[Any, ...]] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = ids.setdefault(item["call_id"], len(ids))
            shape.append((kind, call, item["name"], json.loads(item["arguments"])))
        elif kind == "function_call_output":
            shape.append((kind, ids[item["call_id"]], item["output"]))
        elif kind == "reasoning":
            shape.append((kind, item["id"], item.get("encrypted_content")))
        elif item.get("content"):
            shape.append((item["role"], item["content"]))
    return shape


@pytest.mark.parametrize("path", RESPONSES_CONVERSATIONS)
def test_responses_history_serialises_like_the_recorded_follow_up(path: str) -> None:
    """Every function_call has its function_call_output by call_id, in order (F06)."""
    for history, recorded in replay_history(load(path), parse_responses, _responses_results):
        sent = responses_input(
            ModelRequest(None, tuple(history), ()), ToolNames(()), origin=RESPONSES
        )
        assert responses_shape(sent) == responses_shape(recorded["input"])
        assert all("id" not in item for item in sent if item.get("type") != "reasoning")


def test_reasoning_items_replay_exactly_as_openai_accepted_them() -> None:
    """Four turns of gpt-5.5 with reasoning between calls: the input we build is, item for
    item, the input OpenAI accepted (reasoning right before its call, F07; ids once, F08)."""
    path = (
        "simonw-llm/test_openai_responses/"
        "test_responses_interleaved_reasoning_between_tool_calls.yaml"
    )
    for history, recorded in replay_history(load(path), parse_responses, _responses_results):
        sent = responses_input(
            ModelRequest(None, tuple(history), ()), ToolNames(()), origin=RESPONSES
        )
        assert _parsed_arguments(sent) == _parsed_arguments(recorded["input"])


def _parsed_arguments(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The items with arguments parsed (the recorder re-serialised them with other spacing)."""
    return [
        {**item, "arguments": json.loads(item["arguments"])} if "arguments" in item else dict(item)
        for item in items
    ]
