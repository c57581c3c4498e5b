"""Reasoning sent back as the API requires, and prompt caching, through the official SDK.

The stand-in binds each thinking block it sends to the request it answered (preserved
thinking), refuses a rebuilt or moved turn with the API's `Invalid signature in thinking block`,
a tool loop whose latest turn does not start with its thinking, and more than four cache
breakpoints; and it counts cache reads as the API does. `fake.rejections == []` in each test
means the real API would have taken every request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from provider_anthropic.anthropic_fake_server import (
    BOUND_TEXT,
    MODIFIED_TEXT,
    FakeAnthropic,
    error,
    message,
    model_for,
    text,
    thinking,
    tool_use,
    unmarked,
    validate,
)
from steadyloop import (
    Agent,
    Approve,
    AssistantMessage,
    Cache,
    Compaction,
    ConfigError,
    ToolCall,
    ToolResult,
    UserMessage,
    tool,
)
from steadyloop.events import RunFinished
from steadyloop.messages import Message, Summary
from steadyloop.models.anthropic import AnthropicModel
from steadyloop.retry import Backoff

THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
TOO_LONG = "prompt is too long: 208310 tokens > 200000 maximum"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def agent_for(fake: FakeAnthropic, **options: Any) -> Agent:
    settings = options.pop("settings", THINKING)
    options.setdefault("tools", [get_weather])
    return Agent(
        model_for(fake, settings=settings),
        instructions="Be brief.",
        backoff=Backoff.none(),
        **options,
    )


def reply_with_thinking(n: int, *, calls: bool = True) -> list[dict[str, Any]]:
    """A reply as Claude sends it: thinking (empty text on odd turns: display omitted), text
    blocks apart, redacted thinking between them, a whitespace-only block, then a call."""
    blocks = [
        thinking("" if n % 2 else f"step {n}", f"SIG{n}=="),
        text(f"Checking {n}."),
        {"type": "redacted_thinking", "data": f"opaque{n}"},
        text(" "),
        text("Calling now." if calls else "Done."),
    ]
    if calls:
        blocks.append(tool_use(f"toolu_{n}", "get_weather", {"city": f"c{n}"}))
    return blocks


def assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [turn["content"] for turn in body["messages"] if turn["role"] == "assistant"]


def no_thinking(body: dict[str, Any]) -> bool:
    blocks = [b for turn in body["messages"] for b in turn["content"]]
    return all(b["type"] not in ("thinking", "redacted_thinking") for b in blocks)


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_thinking_tool_loop_goes_back_block_for_block(streamed: bool) -> None:
    """Every reply of the loop goes back exactly as received (less the whitespace-only text
    block the API refuses), so the strict stand-in takes each request."""
    sent = [reply_with_thinking(n) for n in (1, 2)]
    replies = [message(*sent[0]), message(*sent[1]), message(text("All sunny."))]
    prompt = "weather in c1 and c2?"
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake) as agent:
            if streamed:
                events = [e async for e in agent.stream(prompt)]
                assert isinstance(events[-1], RunFinished)
                result = events[-1].result
            else:
                result = await agent.run(prompt)
    assert fake.rejections == []
    last = fake.requests[2]
    kept = [[b for b in content if b != text(" ")] for content in sent]
    assert assistant_turns(last) == kept
    assert last["thinking"] == THINKING["thinking"]
    replies_made = [m for m in result.messages if isinstance(m, AssistantMessage)]
    assert [m.native.content for m in replies_made[:2] if m.native] == sent
    assert replies_made[1].reasoning_text == "step 2"
    assert result.output == "All sunny."
    assert "step" not in result.output


async def test_a_rebuilt_turn_is_what_the_stand_in_refuses() -> None:
    """The check the tests above rely on: merging the text blocks of a reply (as the adapter did
    before) is refused with the API's own text."""
    with FakeAnthropic([message(*reply_with_thinking(1)), message(text("ok"))]) as fake:
        async with agent_for(fake) as agent:
            await agent.run("weather in c1?")
        assert fake.rejections == []
    first = fake.requests[1]
    user, turn, results = first["messages"]
    merged = [*turn["content"][:3], text("Checking 1.Calling now."), turn["content"][-1]]
    rebuilt = {**first, "messages": [user, {**turn, "content": merged}, results]}
    fake.answer(rebuilt)
    assert fake.rejections[-1].endswith(MODIFIED_TEXT)
    fake.answer({**first, "system": "Be verbose."})
    assert fake.rejections[-1].endswith(BOUND_TEXT)
    assert validate({**first, "system": "Be verbose."}) is None  # only the binding breaks


async def test_compaction_inside_a_thinking_tool_loop_turns_thinking_off() -> None:
    """A summary before the kept reply changes its prefix: the next request goes with thinking
    disabled and no thinking block anywhere; the summary request has no cache marks."""
    history: list[Message] = [
        UserMessage("first question"),
        AssistantMessage("first answer"),
        UserMessage("second question"),
        AssistantMessage("second answer"),
    ]
    replies = [
        message(*reply_with_thinking(1)),
        error(400, "invalid_request_error", TOO_LONG),
        message(text("they asked two things")),  # the summary
        message(text("c1 is sunny.")),
    ]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake, compaction=Compaction(keep_recent=2)) as agent:
            result = await agent.run("weather in c1?", history=history)
    assert fake.rejections == []
    assert result.output == "c1 is sunny."
    assert any(isinstance(m, Summary) for m in result.messages)
    summary_request, after = fake.requests[2], fake.requests[3]
    assert "cache_control" not in json.dumps(summary_request)
    assert isinstance(summary_request["system"], str)
    assert after["thinking"] == {"type": "disabled"}
    assert no_thinking(after)
    assert "they asked two things" in json.dumps(after["messages"])


async def test_a_foreign_reply_in_a_tool_loop_turns_thinking_off_until_the_next_prompt() -> None:
    """A history whose tool loop came from another model: the request that goes on from it
    has thinking disabled (the only form the API takes); the next prompt has it on again."""
    call = ToolCall("call_x", "get_weather", "{}")
    history: list[Message] = [
        UserMessage("weather?"),
        AssistantMessage("", (call,)),
        ToolResult(call.id, "get_weather", "sunny"),
    ]
    replies = [message(text("sunny")), message(*reply_with_thinking(3, calls=False))]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake) as agent:
            done = await agent.run("and now?", history=history)
            later = await agent.run("more?", history=done.messages)
    assert fake.rejections == []
    assert fake.requests[0]["thinking"] == {"type": "disabled"}
    assert fake.requests[1]["thinking"] == THINKING["thinking"]
    assert later.messages[-1].reasoning_text == ""  # type: ignore[union-attr]


def test_stand_in_refuses_five_breakpoints_and_a_late_one_hour_mark() -> None:
    mark = {"type": "ephemeral"}
    turns = [{"role": "user", "content": [{**text(f"t{i}"), "cache_control": mark}]} for i in "a"]
    body = {
        "system": [{**text("s"), "cache_control": mark}],
        "tools": [{"name": "a", "input_schema": {}, "cache_control": mark}],
        "messages": [
            *turns,
            {"role": "user", "content": [{**text("c"), "cache_control": mark}]},
            {"role": "user", "content": [{**text("d"), "cache_control": mark}]},
        ],
    }
    assert validate(body) == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    late = {"type": "ephemeral", "ttl": "1h"}
    ordered = {
        "system": [{**text("s"), "cache_control": mark}],
        "messages": [{"role": "user", "content": [{**text("q"), "cache_control": late}]}],
    }
    assert validate(ordered) == (
        "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
    )


def begins_with(later: dict[str, Any], earlier: dict[str, Any]) -> None:
    """`later` starts with `earlier`'s content: the same tools in the same order, the same
    system prompt, every earlier message's JSON equal apart from cache marks."""
    before, after = unmarked(earlier), unmarked(later)
    assert after["tools"] == before["tools"]
    assert after["system"] == before["system"]
    assert after["messages"][: len(before["messages"])] == before["messages"]


async def test_each_request_begins_with_the_one_before_within_and_across_runs() -> None:
    """What caching and preserved thinking need; the stand-in then reads the whole previous
    request from its cache."""
    replies = [
        message(*reply_with_thinking(1)),
        message(*reply_with_thinking(2)),
        message(text("Both sunny.")),
        message(*reply_with_thinking(4)),
        message(text("Still sunny.")),
    ]
    with FakeAnthropic(replies) as fake:
        async with agent_for(fake) as agent:
            first = await agent.run("weather in c1 and c2?")
            await agent.run("and c4?", history=first.messages)
    assert fake.rejections == []
    for earlier, later in zip(fake.requests, fake.requests[1:], strict=False):
        begins_with(later, earlier)
    assert [t["name"] for t in fake.requests[0]["tools"]] == ["get_weather"]


async def test_cached_tokens_reach_usage() -> None:
    """Each request reads what the one before wrote; `Cache(...)=False` reads nothing."""
    script = [message(*reply_with_thinking(n)) for n in (1, 2, 3)] + [message(text("ok"))]
    with FakeAnthropic(list(script)) as fake:
        async with agent_for(fake) as agent:
            cached = await agent.run("weather?")
    with FakeAnthropic(list(script)) as fake_off:
        async with agent_for(fake_off, cache=False) as agent:
            uncached = await agent.run("weather?")
    assert fake.rejections == fake_off.rejections == []
    assert "cache_control" not in json.dumps(fake_off.requests)
    assert uncached.usage.cache_read_tokens == 0
    assert cached.usage.input_tokens == uncached.usage.input_tokens
    assert cached.usage.cache_read_tokens > cached.usage.input_tokens / 2
    usages = [m.usage for m in cached.messages if isinstance(m, AssistantMessage) and m.usage]
    assert all(u.cache_read_tokens > 0 for u in usages[1:])


def test_settings_that_break_the_api_are_refused_when_made() -> None:
    with pytest.raises(ConfigError, match="at most 4"):
        Cache(messages=4)
    with pytest.raises(ConfigError, match="1h breakpoint after a 5m"):
        Cache(prefix="5m", ttl="1h")


async def test_cached_tokens_reach_cost_and_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """The cache reads the API reports are priced at the cache rate and recorded on the model
    call's span."""
    script = [message(*reply_with_thinking(1)), message(text("ok"))]
    runs = []
    for cache in (True, False):
        with FakeAnthropic(list(script)) as fake:
            model = AnthropicModel(
                "claude-sonnet-4-6", base_url=fake.url, api_key="test-key", settings=THINKING
            )
            agent = Agent(
                model,
                tools=[get_weather],
                instructions="Be brief.",
                cache=cache,
                tracer_provider=provider,
            )
            async with agent:
                runs.append(await agent.run("weather in c1?"))
        assert fake.rejections == []
    cached, uncached = runs
    assert cached.usage.cache_read_tokens > 0
    assert cached.usage.cost_usd is not None
    assert uncached.usage.cost_usd is not None
    assert cached.usage.input_tokens == uncached.usage.input_tokens
    assert cached.usage.cost_usd != uncached.usage.cost_usd
    reads = [
        span.attributes.get("gen_ai.usage.cache_read.input_tokens")
        for span in exporter.get_finished_spans()
        if span.attributes and "gen_ai.usage.input_tokens" in span.attributes
    ]
    assert cached.usage.cache_read_tokens in reads


async def test_a_paused_run_resumed_from_the_log_sends_the_reply_as_received(
    tmp_path: Path,
) -> None:
    """The run log keeps `native`: another agent resuming the run from the log sends the logged
    reply block for block, so the strict stand-in takes the thinking it bound."""

    @tool(approve=True)
    def refund(order: str) -> str:
        """Refunds an order."""
        return f"refunded {order}"

    received = [
        thinking("Refund it.", "SIGR=="),
        text("Refunding"),
        {"type": "redacted_thinking", "data": "opaqueR"},
        text("A1."),
        tool_use("toolu_r", "refund", {"order": "A1"}),
    ]
    store = tmp_path / "runs.db"
    with FakeAnthropic([message(*received), message(text("Done."))]) as fake:
        options: dict[str, Any] = {"tools": [refund], "store": store, "settings": THINKING}
        async with agent_for(fake, **options) as agent:
            paused = await agent.run("refund A1")
        assert paused.stop_reason == "approval"
        async with agent_for(fake, **options) as other:
            assert paused.run_id is not None
            done = await other.resume(paused.run_id, decisions={"toolu_r": Approve()})
    assert fake.rejections == []
    assert done.output == "Done."
    assert fake.requests[1]["messages"][1]["content"] == received
    assert fake.requests[1]["thinking"] == THINKING["thinking"]
