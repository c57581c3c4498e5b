"""Whole agent runs through the official `openai` SDK against a local fake OpenAI server.

Each test runs twice, against Chat Completions and against Responses. The server enforces the
providers' history rules with their real error texts, so a run that succeeds proves the adapter
sent a history the real service would accept.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

import pytest

from provider_openai.openai_fake_server import (
    Drop,
    EmptyStream,
    Fail,
    FakeOpenAI,
    Reply,
    Stall,
    StreamError,
    rate_limit_body,
)
from steadyloop import (
    Agent,
    Compaction,
    ConfigError,
    ContextLimitExceeded,
    Limits,
    Summary,
    ToolError,
    tool,
)
from steadyloop.errors import ModelError
from steadyloop.events import Event, RunFinished, TextDelta, ToolCallDelta
from steadyloop.messages import (
    AssistantMessage,
    Message,
    Reasoning,
    ToolCall,
    ToolResult,
    UserMessage,
)
from steadyloop.models.openai_base import OpenAIModel
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.models.wire import ToolNames
from steadyloop.result import RunResult
from steadyloop.retry import Backoff

MakeModel = Callable[..., OpenAIModel]  # the `make_model` fixture (conftest.py)
LONG_ID = "call__0_get_weather_cmpl-53b2caaf-d1e2-4e12-93b9-50d609f9900a-with-more-to-pass-64"


def fast_agent(model: Any, **options: Any) -> Agent:
    options.setdefault("backoff", Backoff.none())
    return Agent(model, **options)


def final(events: list[Event]) -> RunResult:
    """The result a streamed run finished with (its last event)."""
    last = events[-1]
    assert isinstance(last, RunFinished)
    return last.result


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


async def test_parallel_calls_unknown_tool_error_result_and_odd_names(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    """One turn: two parallel calls (both must be running at once), a call to a tool with a
    dotted name (F25), an unknown tool (F16), a tool raising ToolError, a 80-character id (F24)
    and an empty id (F23); the follow-up request passes every pairing rule (F04/F06)."""
    barrier = asyncio.Barrier(2)
    ran: list[str] = []

    @tool
    async def add(a: int, b: int) -> int:
        """Adds two numbers."""
        await asyncio.wait_for(barrier.wait(), 5)
        return a + b

    @tool(name="calendar.lookup")
    def lookup(day: str) -> str:
        """Looks up a day in the calendar."""
        ran.append(day)
        return f"{day}: free"

    @tool
    def fail() -> str:
        """Always fails."""
        raise ToolError("disk full")

    wire = ToolNames(["calendar.lookup"]).to_wire("calendar.lookup")
    assert wire != "calendar.lookup"
    server.queue(
        Reply(
            text="Let me check.",
            calls=[
                ("call_a", "add", '{"a": 1, "b": 2}'),
                ("call_b", "add", '{"a": 10, "b": 20}'),
                (LONG_ID, wire, '{"day": "monday"}'),
                ("", "made_up", "{}"),
                ("call_e", "fail", "{}"),
            ],
        ),
        Reply(text="All done."),
    )
    agent = fast_agent(make_model(), tools=[add, lookup, fail])
    result = await agent.run("do it")
    assert result.output == "All done."
    assert server.rejected == []
    assert ran == ["monday"]
    reply = result.messages[1]
    assert isinstance(reply, AssistantMessage)
    assert reply.text == "Let me check."
    assert [c.name for c in reply.tool_calls] == [
        "add",
        "add",
        "calendar.lookup",
        "made_up",
        "fail",
    ]
    answers = [m for m in result.messages if isinstance(m, ToolResult)]
    assert [(a.content, a.is_error) for a in answers[:3]] == [
        ("3", False),
        ("30", False),
        ("monday: free", False),
    ]
    assert "made_up" in answers[3].content
    assert "add" in answers[3].content
    assert answers[3].is_error
    assert (answers[4].content, answers[4].is_error) == ("disk full", True)
    follow_up = json.dumps(server.requests[1])
    assert "Let me check." in follow_up  # text and calls of one reply both kept (F19)
    sent = results_sent(server, 1)
    assert [content for _, content in sent] == [a.content for a in answers]
    assert len({call_id for call_id, _ in sent}) == 5  # ids unique and valid on the wire
    tools_sent = server.requests[0]["tools"]
    names = [t["function"]["name"] if "function" in t else t["name"] for t in tools_sent]
    assert wire in names


async def test_history_the_provider_would_reject_is_repaired_on_the_wire(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    """A history with a call left unanswered (F04/F06/F09), an orphan result (F05), an empty
    reply with no calls (F21), ids from other providers (F24) and duplicated ids (F22), and an
    Anthropic thinking block, still makes a request the server accepts."""
    history: list[Message] = [
        UserMessage("first"),
        AssistantMessage(
            tool_calls=(
                ToolCall("functions.lookup:0", "lookup", '{"day": "a"}'),
                ToolCall("functions.lookup:0", "lookup", {"day": "b"}),  # object args (F15)
            ),
            reasoning=(Reasoning("anthropic", {"type": "thinking", "thinking": "hm"}),),
        ),
        ToolResult("functions.lookup:0", "lookup", "a: free"),
        ToolResult("toolu_orphan", "lookup", "from nowhere"),
        AssistantMessage(text=""),
        UserMessage("second"),
        AssistantMessage(tool_calls=(ToolCall(LONG_ID, "lookup", '{"day": "c"'),)),  # cut off
    ]
    server.queue(Reply(text="fine"))
    agent = fast_agent(make_model(), tools=[])
    result = await agent.run("third", history=history)
    assert result.output == "fine"
    assert server.rejected == []
    body = json.dumps(server.requests[0])
    assert "from nowhere" in body  # the orphan result is kept, as text
    assert "thinking" not in body  # another provider's reasoning is left out
    assert "functions.lookup:0" not in body
    assert LONG_ID not in body
    assert result.messages[: len(history)] == tuple(history)  # the transcript keeps originals


async def test_no_tools_means_no_tools_fields(server: FakeOpenAI, make_model: MakeModel) -> None:
    """`parallel_tool_calls` is only sent with tools (F39); `tools: []` never (F21)."""
    server.queue(Reply(text="hello"))
    agent = fast_agent(make_model(parallel_tool_calls=False))
    result = await agent.run("hi")
    assert result.output == "hello"
    assert "tools" not in server.requests[0]
    assert "parallel_tool_calls" not in server.requests[0]


async def test_instructions_go_where_each_api_wants_them(
    server: FakeOpenAI, make_model: MakeModel, api: str
) -> None:
    server.queue(Reply(text="ok", usage=(123, 7)))
    result = await fast_agent(make_model(), instructions="Be brief.").run("hi")
    body = server.requests[0]
    if api == "chat":
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    else:
        assert body["instructions"] == "Be brief."
        assert body["store"] is False
        assert "previous_response_id" not in body
    assert (result.usage.input_tokens, result.usage.output_tokens) == (123, 7)


async def test_sdk_retries_a_429_itself(server: FakeOpenAI, make_model: MakeModel) -> None:
    server.queue(Fail(429, rate_limit_body(), {"retry-after-ms": "10"}), Reply(text="ok"))
    agent = fast_agent(make_model(max_retries=2), model_retries=0)
    assert (await agent.run("hi")).output == "ok"
    assert len(server.requests) == 2


async def test_quota_429_fails_at_once(server: FakeOpenAI, make_model: MakeModel) -> None:
    body = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    server.queue(Fail(429, body), Reply(text="never"))
    with pytest.raises(ModelError, match="quota") as info:
        await fast_agent(make_model()).run("hi")
    assert not info.value.retryable
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [403, 404])
async def test_unknown_model_or_forbidden_is_a_config_error(
    server: FakeOpenAI, make_model: MakeModel, status: int
) -> None:
    body = {
        "error": {
            "message": "The model `gpt-test` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }
    server.queue(Fail(status, body))
    with pytest.raises(ConfigError, match="does not exist"):
        await fast_agent(make_model(max_retries=2)).run("hi")
    assert len(server.requests) == 1


async def test_context_too_long_without_compaction_stops_the_run(
    make_model: MakeModel, server: FakeOpenAI
) -> None:
    server.max_input_chars = 2_000
    agent = fast_agent(make_model())
    with pytest.raises(ContextLimitExceeded, match="the provider says") as info:
        await agent.run("x" * 3_000)
    assert len(server.requests) == 1  # not retried
    assert info.value.result.messages[-1] == UserMessage("x" * 3_000)


async def test_context_too_long_with_compaction_compacts_once_then_succeeds(
    make_model: MakeModel, server: FakeOpenAI
) -> None:
    server.max_input_chars = 5_000
    history: list[Message] = [
        UserMessage("task: count the files"),
        AssistantMessage(tool_calls=(ToolCall("call_1", "ls", "{}"),)),
        ToolResult("call_1", "ls", "f" * 6_000),
        AssistantMessage("there are many files"),
        UserMessage("and now?"),
        AssistantMessage("still many"),
    ]
    server.queue(Reply(text="summary: many files were listed"), Reply(text="done"))
    agent = fast_agent(
        make_model(),
        compaction=Compaction(keep_recent=2, trigger=1.0),
        limits=Limits(max_context_tokens=2_000),
    )
    result = await agent.run("finish up", history=history)
    assert result.output == "done"
    summaries = [m for m in result.messages if isinstance(m, Summary)]
    assert len(summaries) == 1
    assert summaries[0].text == "summary: many files were listed"
    assert len(server.requests) == 3  # rejected, summary request, retried request
    assert "tools" not in server.requests[1]
    assert "earlier messages summarised" in json.dumps(server.requests[2])


async def test_call_cut_off_by_the_output_limit_is_not_run(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    """finish_reason length / Responses incomplete: the call is answered, never executed (F18)."""
    ran: list[str] = []

    @tool
    def save(text: str) -> str:
        """Saves text."""
        ran.append(text)
        return "saved"

    server.queue(Reply(calls=[("call_s", "save", '{"text": "abc')], finish="length"))
    server.queue(Reply(text="sorry"))
    result = await fast_agent(make_model(), tools=[save]).run("save it")
    assert ran == []
    assert result.output == "sorry"
    [answer] = [m for m in result.messages if isinstance(m, ToolResult)]
    assert answer.is_error
    assert "cut off" in answer.content
    assert server.rejected == []


async def test_stream_yields_text_and_tool_call_deltas_as_they_arrive(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    server.queue(
        Reply(text="Checking. ", calls=[("call_w", "weather", '{"city": "Paris"}')]),
        Reply(text="It is sunny in Paris today."),
    )
    events = [e async for e in fast_agent(make_model(), tools=[weather]).stream("weather?")]
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(texts) > 3
    assert "".join(texts) == "Checking. It is sunny in Paris today."
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert calls[0].id == "call_w"
    assert calls[0].name == "weather"
    assert "".join(c.arguments for c in calls) == '{"city": "Paris"}'
    assert len(calls) >= 2
    assert all(r.get("stream") for r in server.requests)
    assert results_sent(server, 1) == [("call_w", "sunny in Paris")]


async def test_stream_cut_mid_way_is_retried(server: FakeOpenAI, make_model: MakeModel) -> None:
    """The connection closes inside a tool call: a retryable error, the call never runs (F37)."""
    ran: list[int] = []

    @tool
    def cut(x: int, y: int) -> int:
        """Would add."""
        ran.append(x)
        return x + y

    server.queue(Drop(), Reply(text="recovered"))
    events = [e async for e in fast_agent(make_model(), tools=[cut]).stream("go")]
    assert ran == []
    assert len(server.requests) == 2
    assert final(events).output == "recovered"


async def test_stream_cut_without_retries_is_a_retryable_model_error(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    server.queue(Drop())
    with pytest.raises(ModelError) as info:
        async for _ in fast_agent(make_model(), model_retries=0).stream("go"):
            pass
    assert info.value.retryable


async def test_a_stream_that_ends_before_any_data_says_the_server_failed_on_the_request(
    server: FakeOpenAI,
) -> None:
    server.queue(EmptyStream(), EmptyStream())
    model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key=server.api_key)
    with pytest.raises(ModelError) as info:
        async for _ in fast_agent(model, model_retries=1).stream("go"):
            pass
    assert "ended the stream before sending anything" in str(info.value)
    assert len(server.requests) == 2  # retried once, as asked, then reported
    await model.aclose()


async def test_error_inside_a_200_stream_is_an_error_not_a_reply(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    """A server error object after partial text (F36): retried, partial text not kept."""
    server.queue(StreamError({"message": "The server had an error", "type": "server_error"}))
    server.queue(Reply(text="clean answer"))
    events = [e async for e in fast_agent(make_model()).stream("hi")]
    result = final(events)
    assert result.output == "clean answer"
    assert [m for m in result.messages if isinstance(m, AssistantMessage)] == [result.messages[-1]]


async def test_responses_failed_event_is_retried(server: FakeOpenAI) -> None:
    """`response.failed` with a server error: an error (retryable), never a reply."""
    from steadyloop.models.openai_responses import OpenAIResponsesModel

    error = {"code": "server_error", "message": "The model failed to generate a response."}
    server.queue(StreamError(error, failed=True), Reply(text="second try"))
    model = OpenAIResponsesModel("gpt-test", base_url=server.base_url, api_key=server.api_key)
    async with fast_agent(model) as agent:
        events = [e async for e in agent.stream("hi")]
    assert final(events).output == "second try"
    assert len(server.requests) == 2


async def test_context_error_inside_a_stream_is_a_context_error(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    """Responses sends context_length_exceeded as a streamed event (F34)."""
    error = {
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model. Please adjust your "
        "input and try again.",
        "param": "input",
    }
    server.queue(StreamError(error))
    with pytest.raises(ContextLimitExceeded):
        async for _ in fast_agent(make_model()).stream("hi"):
            pass
    assert len(server.requests) == 1


async def test_reasoning_items_of_a_log_without_native_content_stay_off_the_wire(
    server: FakeOpenAI,
) -> None:
    """A history from a log made before replies kept their native content holds `Reasoning`
    items, one of them only an id: the replies go as their text and calls, so no id-only item
    meets `store: false` (the 404) and no item of unknown origin is sent."""
    from steadyloop.models.openai_responses import OpenAIResponsesModel

    id_only = Reasoning("openai-responses", {"type": "reasoning", "id": "rs_1", "summary": []})
    encrypted = Reasoning(
        "openai-responses",
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "e2"},
    )
    history: list[Message] = [
        UserMessage("go"),
        AssistantMessage(
            "thinking aloud", (ToolCall("call_1", "lookup", "{}"),), reasoning=(id_only,)
        ),
        ToolResult("call_1", "lookup", "found"),
        AssistantMessage("done before", reasoning=(encrypted,)),
    ]
    server.queue(Reply(text="ok"))
    model = OpenAIResponsesModel(
        "gpt-test", base_url=server.base_url, api_key=server.api_key, reasoning={"effort": "low"}
    )
    result = await fast_agent(model).run("next", history=history)
    assert result.output == "ok"
    assert server.rejected == []
    body = server.requests[0]
    kinds = [i.get("type", i.get("role")) for i in body["input"]]
    assert kinds == [
        "user",
        "assistant",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
    ]
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low"}


@pytest.mark.parametrize("streaming", [False, True])
async def test_arguments_sent_as_an_object_are_accepted(
    server: FakeOpenAI, make_model: MakeModel, streaming: bool
) -> None:
    """Some compatible servers send `arguments` as an object (F15): the call runs, and the
    history sent back carries a JSON string (the server rejects anything else)."""
    seen: list[str] = []

    @tool
    def locate(city: str, country: str) -> str:
        """Finds a city."""
        seen.append(f"{city}, {country}")
        return "found"

    server.queue(
        Reply(calls=[("call_o", "locate", {"city": "Lyon", "country": "FR"})]),
        Reply(text="ok"),
    )
    agent = fast_agent(make_model(), tools=[locate])
    if streaming:
        output = final([e async for e in agent.stream("where?")]).output
    else:
        output = (await agent.run("where?")).output
    assert output == "ok"
    assert seen == ["Lyon, FR"]
    assert server.rejected == []


async def test_duplicate_call_ids_in_one_reply_both_run(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    """A provider repeating one id for two calls (F22): both run, both answered, ids unique."""
    seen: list[int] = []

    @tool
    def square(n: int) -> int:
        """Squares a number."""
        seen.append(n)
        return n * n

    server.queue(
        Reply(calls=[("call_1", "square", '{"n": 2}'), ("call_1", "square", '{"n": 3}')]),
        Reply(text="4 and 9"),
    )
    result = await fast_agent(make_model(), tools=[square]).run("squares")
    assert sorted(seen) == [2, 3]
    assert result.output == "4 and 9"
    sent = results_sent(server, 1)
    assert [content for _, content in sent] == ["4", "9"]
    assert len({call_id for call_id, _ in sent}) == 2


async def test_timeouts_and_refused_connections_are_retryable(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    server.queue(Stall(1.0))
    with pytest.raises(ModelError, match="timed out") as info:
        await fast_agent(make_model(timeout=0.2), model_retries=0).run("hi")
    assert info.value.retryable

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    with pytest.raises(ModelError, match="Connection error") as refused:
        await fast_agent(make_model(base_url=closed), model_retries=0).run("hi")
    assert refused.value.retryable


async def test_a_history_sent_again_each_turn_is_not_parsed_again(
    server: FakeOpenAI, make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call's arguments go back to the provider with every later request; they are
    read once (measured and dispatched), not once more per request."""
    first = '{"a": 1, "b": 2}'
    reads: list[str] = []
    decode = json.JSONDecoder.raw_decode

    def counted(self: json.JSONDecoder, text: str, idx: int = 0) -> tuple[object, int]:
        if text == first:
            reads.append(text)
        return decode(self, text, idx)

    @tool
    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        return a + b

    server.queue(
        Reply(calls=[("c1", "add", first)]),
        *(Reply(calls=[(f"c{n}", "add", f'{{"a": {n}, "b": 0}}')]) for n in range(2, 6)),
        Reply(text="done"),
    )
    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    result = await fast_agent(make_model(), tools=[add]).run("add")
    assert result.output == "done"
    assert len(server.requests) == 6
    assert len(reads) == 1
