"""Whole agent runs against the fake Anthropic server, through the official SDK.

The server rejects any request that breaks Anthropic's history rules with the real 400, so
every run here also proves the requests were valid (`fake.rejections == []`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from provider_anthropic.anthropic_fake_server import (
    FakeAnthropic,
    Reply,
    error,
    message,
    model_for,
    stream_events,
    text,
    tool_use,
)
from steadyloop import (
    Agent,
    AssistantMessage,
    Compaction,
    ConfigError,
    ContextLimitExceeded,
    ContextWindowExceeded,
    Summary,
    ToolCall,
    ToolError,
    ToolResult,
    UserMessage,
    tool,
)
from steadyloop.events import Event, RunFinished, TextDelta, ToolCallDelta
from steadyloop.messages import Message
from steadyloop.models.wire import ToolNames
from steadyloop.output import EMPTY_REPLY_TEXT
from steadyloop.result import RunResult
from steadyloop.retry import Backoff

TOO_LONG = "prompt is too long: 208310 tokens > 200000 maximum"
OVERLOADED = {
    "type": "error",
    "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
}


def weather_tools(ran: list[str]) -> list[Any]:
    @tool
    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city's name.
        """
        ran.append(city)
        if city == "Atlantis":
            raise ToolError("no such city: Atlantis")
        return f"sunny in {city}"

    @tool(name="calendar.lookup")
    def lookup(day: str) -> str:
        """Free slots on a day."""
        return f"free on {day}"

    return [get_weather, lookup]


def agent_for(fake: FakeAnthropic, ran: list[str] | None = None, **options: Any) -> Agent:
    model_options = options.pop("model_options", {})
    return Agent(
        model_for(fake, **model_options),
        tools=weather_tools(ran if ran is not None else []),
        backoff=Backoff.none(),
        **options,
    )


def finished(events: list[Event]) -> RunResult:
    """The result carried by the stream's last event."""
    last = events[-1]
    assert isinstance(last, RunFinished)
    return last.result


def last_user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = body["messages"][-1]["content"]
    return blocks


async def test_parallel_calls_unknown_tool_error_result_and_mapped_name() -> None:
    """F01, F03a, F16, F25, F27, F44: four calls in one reply, all answered first in one turn."""
    lookup = ToolNames(["calendar.lookup"]).to_wire("calendar.lookup")
    first = message(
        text("Checking."),
        tool_use("toolu_a", "get_weather", {"city": "Paris"}),
        tool_use("toolu_b", "get_weather", {"city": "Atlantis"}),
        tool_use("toolu_c", "made_up", {}),
        tool_use("toolu_d", lookup, {"day": "monday"}),
    )
    ran: list[str] = []
    with FakeAnthropic([first, message(text("Paris is sunny."))]) as fake:
        async with agent_for(fake, ran, instructions="Be brief.") as agent:
            result = await agent.run("weather?")
    assert result.output == "Paris is sunny."
    assert fake.rejections == []
    assert sorted(ran) == ["Atlantis", "Paris"]
    body = fake.requests[1]
    assert body["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert {t["name"] for t in body["tools"]} == {"get_weather", lookup}
    assert body["messages"][1]["content"][0] == text("Checking.")
    results = last_user_blocks(body)
    assert [b["tool_use_id"] for b in results] == ["toolu_a", "toolu_b", "toolu_c", "toolu_d"]
    assert [b.get("is_error", False) for b in results] == [False, True, True, False]
    assert results[0]["content"] == "sunny in Paris"
    assert "no such city: Atlantis" in results[1]["content"]
    assert "made_up" in results[2]["content"]
    reply = next(m for m in result.messages if isinstance(m, AssistantMessage))
    assert reply.tool_calls[3].name == "calendar.lookup"
    assert any(isinstance(m, ToolResult) and m.content == "free on monday" for m in result.messages)
    before, after = (m.usage for m in result.messages if isinstance(m, AssistantMessage))
    assert before is not None
    assert after is not None
    assert before.cache_read_tokens == 0
    assert after.cache_read_tokens == before.cache_write_tokens > 0  # the cached prefix
    assert result.usage.cache_read_tokens == after.cache_read_tokens
    assert result.usage.input_tokens == before.input_tokens + after.input_tokens


async def test_unknown_model_is_a_config_error() -> None:
    missing = error(404, "not_found_error", "model: claude-fake")
    with FakeAnthropic([missing]) as fake:
        async with agent_for(fake) as agent:
            with pytest.raises(ConfigError, match="model name"):
                await agent.run("hi")
    assert len(fake.requests) == 1


async def test_prompt_too_long_without_compaction_stops_the_run() -> None:
    """F34: the provider's context error becomes ContextLimitExceeded, limit parsed."""
    with FakeAnthropic([error(400, "invalid_request_error", TOO_LONG)]) as fake:
        async with agent_for(fake) as agent:
            with pytest.raises(ContextLimitExceeded) as caught:
                await agent.run("hi")
    cause = caught.value.__cause__
    assert isinstance(cause, ContextWindowExceeded)
    assert cause.limit == 200_000
    assert len(fake.requests) == 1


async def test_prompt_too_long_with_compaction_compacts_once_and_succeeds() -> None:
    history: list[Message] = [
        UserMessage("first question"),
        AssistantMessage("first answer"),
        UserMessage("second question"),
        AssistantMessage("second answer"),
        UserMessage("third question"),
        AssistantMessage("third answer"),
    ]
    compaction = Compaction(keep_recent=2, summarise=lambda messages: "they asked three things")
    replies = [error(400, "invalid_request_error", TOO_LONG), message(text("done"))]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake, compaction=compaction) as agent:
            result = await agent.run("fourth question", history=history)
    assert result.output == "done"
    assert sum(isinstance(m, Summary) for m in result.messages) == 1
    assert fake.rejections == []
    sent = json.dumps(fake.requests[1]["messages"])
    assert "they asked three things" in sent
    assert "second question" not in sent
    assert len(fake.requests[1]["messages"]) < len(fake.requests[0]["messages"])


async def test_context_window_full_stop_reason_is_a_context_error() -> None:
    """F34: `stop_reason: model_context_window_exceeded` on a 200 stops like a context error."""
    full = message(text("partial"), stop_reason="model_context_window_exceeded")
    with FakeAnthropic([full]) as fake:
        async with agent_for(fake) as agent:
            with pytest.raises(ContextLimitExceeded):
                await agent.run("hi")


async def test_stream_yields_text_and_tool_call_deltas_from_sse() -> None:
    """F38: Agent.stream shows the text as it arrives and the call's argument fragments."""
    replies = [
        message(text("Let me look."), tool_use("toolu_s", "get_weather", {"city": "Oslo"})),
        message(text("Oslo is sunny today, friend.")),
    ]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake) as agent:
            events: list[Event] = [e async for e in agent.stream("weather in Oslo?")]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == "Let me look.Oslo is sunny today, friend."
    assert len(deltas) >= 4
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert calls[0].id == "toolu_s"
    assert calls[0].name == "get_weather"
    assert json.loads("".join(c.arguments for c in calls)) == {"city": "Oslo"}
    assert all(body["stream"] is True for body in fake.requests)


async def test_error_event_mid_stream_is_retried_and_partial_text_never_kept() -> None:
    """F36: message_start, text, then `event: error` overloaded: retried, only the answer stays."""
    partial = stream_events(message(text("This answer will be cut")).message or {})[:4]
    replies = [Reply(events=[*partial, OVERLOADED]), message(text("Whole answer."))]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake) as agent:
            events = [e async for e in agent.stream("hi")]
    result = finished(events)
    assert result.output == "Whole answer."
    assert [m.text for m in result.messages if isinstance(m, AssistantMessage)] == ["Whole answer."]
    assert len(fake.requests) == 2


async def test_stream_dropped_mid_tool_call_is_retried_and_the_call_never_runs() -> None:
    """F37: the connection drops after a partial tool-call delta (no message_stop)."""
    cut = stream_events(
        message(tool_use("toolu_x", "get_weather", {"city": "Paris"})).message or {}
    )
    ran: list[str] = []
    with FakeAnthropic([Reply(events=cut[:4], broken=True), message(text("fine"))]) as fake:
        async with agent_for(fake, ran) as agent:
            events = [e async for e in agent.stream("hi")]
    assert finished(events).output == "fine"
    assert ran == []


async def test_stream_ending_without_message_stop_is_retried() -> None:
    """F37: a stream that ends cleanly but early is not a reply."""
    early = stream_events(message(text("half of it")).message or {})[:-2]
    with FakeAnthropic([Reply(events=early), message(text("all of it"))]) as fake:
        async with agent_for(fake) as agent:
            events = [e async for e in agent.stream("hi")]
    assert finished(events).output == "all of it"
    assert len(fake.requests) == 2


async def test_call_cut_by_max_tokens_is_never_run() -> None:
    """F18: the reply ran out of tokens inside a call: it is answered as cut off, not run."""
    cut = message(tool_use("toolu_cut", "get_weather", {"city": "Par"}), stop_reason="max_tokens")
    ran: list[str] = []
    with FakeAnthropic([cut, message(text("sorry"))]) as fake:
        async with agent_for(fake, ran) as agent:
            result = await agent.run("hi")
    assert ran == []
    assert result.output == "sorry"
    (answer,) = last_user_blocks(fake.requests[1])
    assert answer["is_error"] is True
    assert "cut off" in answer["content"]


async def test_interrupted_history_with_foreign_and_duplicate_ids_is_sent_valid() -> None:
    """F09, F22, F23, F24: calls without results, an id used twice, ids in other formats."""
    long_id = "call__0_get_weather_cmpl-" + "0" * 60
    history: list[Message] = [
        UserMessage("weather in Paris, Rome, Oslo and Bergen?"),
        AssistantMessage(
            "",
            (
                ToolCall("functions.get_weather:0", "get_weather", '{"city": "Paris"}'),
                ToolCall("functions.get_weather:0", "get_weather", '{"city": "Rome"}'),
                ToolCall("call_a|fc_b", "get_weather", '{"city": "Oslo"}'),
                ToolCall(long_id, "get_weather", '{"city": "Bergen"}'),
                ToolCall("", "get_weather", "null"),
            ),
        ),
        ToolResult("functions.get_weather:0", "get_weather", "sunny in Paris"),
    ]
    with FakeAnthropic([message(text("Only Paris is known."))]) as fake:
        async with agent_for(fake) as agent:
            result = await agent.run("go on", history=history)
    assert result.output == "Only Paris is known."
    assert fake.rejections == []
    wire_calls = fake.requests[0]["messages"][1]["content"]
    ids = [b["id"] for b in wire_calls]
    assert len(set(ids)) == 5
    assert [b["input"] for b in wire_calls][-1] == {}
    assert result.messages[1] == history[1]  # the canonical history keeps its ids


async def test_empty_and_whitespace_replies_are_sent_back_valid() -> None:
    """F20: `content: []` and a whitespace-only reply are no answer: each is followed by an
    instruction and the model is asked again, with a valid request."""
    replies = [message(), message(text("\n\n")), message(text("third"))]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake) as agent:
            result = await agent.run("one")
    assert result.output == "third"
    assert fake.rejections == []
    last = fake.requests[2]["messages"]
    assistant_turns = [m for m in last if m["role"] == "assistant"]
    assert len(assistant_turns) == 2
    assert all(b["text"].strip() for turn in assistant_turns for b in turn["content"])
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[-1]["content"][0]["text"] == EMPTY_REPLY_TEXT


async def test_thinking_is_replayed_before_the_calls() -> None:
    """F40: with thinking on, the reply's thinking block goes back first, signature intact."""
    thinking = {"type": "thinking", "thinking": "Need the weather.", "signature": "EqsigXYZ"}
    replies = [
        message(thinking, tool_use("toolu_t", "get_weather", {"city": "Lima"})),
        message(text("ok")),
    ]
    settings = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake, model_options={"settings": settings}) as agent:
            events = [e async for e in agent.stream("weather in Lima?")]
    assert finished(events).output == "ok"
    assert fake.rejections == []
    replayed = fake.requests[1]["messages"][1]["content"]
    assert replayed[0] == thinking
    assert fake.requests[1]["thinking"] == settings["thinking"]


async def test_environment_names_the_server_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Agent("anthropic:MODEL")` honours ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY."""
    with FakeAnthropic([message(text("from env"))]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
        async with Agent("anthropic:claude-env", backoff=Backoff.none()) as agent:
            result = await agent.run("hi")
    assert result.output == "from env"
    assert fake.requests[0]["model"] == "claude-env"
    assert "tools" not in fake.requests[0]


async def test_large_max_tokens_streams_even_for_plain_requests() -> None:
    """The SDK refuses plain requests that may run over 10 minutes; the reply is streamed."""
    with FakeAnthropic([message(text("long answer"))]) as fake:
        async with agent_for(fake, model_options={"max_tokens": 64_000}) as agent:
            result = await agent.run("write a lot")
    assert result.output == "long answer"
    assert fake.requests[0]["stream"] is True
    assert fake.requests[0]["max_tokens"] == 64_000


async def test_tool_choice_setting_is_left_out_of_the_summary_request() -> None:
    """F11/F39: settings apply to tool requests; a compaction summary has no tools."""
    choice = {"type": "auto", "disable_parallel_tool_use": True}
    history: list[Message] = [UserMessage(f"question {i}") for i in range(4)]
    compaction = Compaction(keep_recent=1)
    replies = [
        error(400, "invalid_request_error", TOO_LONG),
        message(text("summary")),
        message(text("ok")),
    ]
    with FakeAnthropic(replies) as fake:
        async with agent_for(
            fake, compaction=compaction, model_options={"settings": {"tool_choice": choice}}
        ) as agent:
            result = await agent.run("and?", history=history)
    assert result.output == "ok"
    first, summary, retried = fake.requests
    assert first["tool_choice"] == choice == retried["tool_choice"]
    assert "tools" not in summary
    assert "tool_choice" not in summary
