"""The spans of a traced run: names, attributes and parents per the GenAI conventions, content
only when asked for, retries, stops and compactions as events, untraced runs unchanged."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from steadyloop import (
    Agent,
    AssistantMessage,
    Compaction,
    Limits,
    ModelError,
    ToolCall,
    ToolError,
    TurnLimitExceeded,
    Usage,
    UserMessage,
    tool,
)
from steadyloop.messages import Message
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.retry import Backoff
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.tools import ToolSpec
from tracing.local_servers import REPLY_USAGE, chat_completions
from tracing.span_checks import attributes, everything_recorded, named, only, parent_id, span_id

MODEL = "openai:gpt-4.1-mini"


async def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def calls(*names_and_args: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(
            ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(names_and_args)
        ),
        stop_reason="tool_use",
    )


async def test_a_run_is_an_invoke_agent_span_over_chat_and_execute_tool_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall("c1", "add", '{"a": 1, "b": 2}'),
                    ToolCall("c2", "add", '{"a": 3, "b": 4}'),
                ),
                usage=Usage(100, 20, cache_read_tokens=40),
                stop_reason="tool_use",
                response_id="chatcmpl-1",
            ),
            AssistantMessage("3 and 7", usage=Usage(130, 5), stop_reason="end_turn"),
        ],
        name=MODEL,
    )
    agent = Agent(model, tools=[add], store=tmp_path / "runs.db", tracer_provider=provider)
    result = await agent.run("add them")
    await agent.aclose()

    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "chat gpt-4.1-mini",
        "chat gpt-4.1-mini",
        "execute_tool add",
        "execute_tool add",
        "invoke_agent",
    ]
    run = only(spans, "invoke_agent")
    assert run.kind is SpanKind.INTERNAL
    assert run.parent is None
    assert attributes(run)["gen_ai.operation.name"] == "invoke_agent"
    assert attributes(run)["steadyloop.run_id"] == result.run_id
    assert attributes(run)["gen_ai.usage.input_tokens"] == 230
    assert attributes(run)["gen_ai.usage.output_tokens"] == 25
    assert attributes(run)["steadyloop.stop_reason"] == "end_turn"
    assert run.context is not None
    for span in spans:
        assert span.context is not None
        assert span.context.trace_id == run.context.trace_id
        if span is not run:
            assert parent_id(span) == span_id(run)

    first, second = named(spans, "chat gpt-4.1-mini")
    assert first.kind is SpanKind.CLIENT
    assert attributes(first) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4.1-mini",
        "gen_ai.response.model": "gpt-4.1-mini",
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.usage.cache_read.input_tokens": 40,
        "steadyloop.cost_usd": pytest.approx(result.messages[1].usage.cost_usd),  # type: ignore[union-attr]
    }
    assert "gen_ai.response.id" not in attributes(second)
    assert attributes(second)["gen_ai.response.finish_reasons"] == ("end_turn",)

    tools = named(spans, "execute_tool add")
    assert sorted(attributes(s)["gen_ai.tool.call.id"] for s in tools) == ["c1", "c2"]
    for span in tools:
        assert span.kind is SpanKind.INTERNAL
        assert attributes(span)["gen_ai.operation.name"] == "execute_tool"
        assert attributes(span)["gen_ai.tool.name"] == "add"
        assert attributes(span)["steadyloop.tool.attempts"] == 1
        assert attributes(span)["steadyloop.tool.truncated"] is False
        assert "error.type" not in attributes(span)
        # the model's second call came after both tools had answered
        assert span.end_time is not None
        assert second.start_time is not None
        assert span.end_time <= second.start_time


async def test_spans_a_tool_starts_are_children_of_its_execute_tool_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = provider.get_tracer("the application")
    threads: list[str] = []

    def lookup_sync(key: str) -> str:
        """Looks a key up in a blocking client."""
        threads.append(threading.current_thread().name)
        with tracer.start_as_current_span("db query"):
            return key.upper()

    async def lookup_async(key: str) -> str:
        """Looks a key up in an async client."""
        with tracer.start_as_current_span("http request"):
            await asyncio.sleep(0)
            return key.lower()

    model = ScriptedModel(
        [calls(("lookup_sync", '{"key": "a"}'), ("lookup_async", '{"key": "B"}')), "done"]
    )
    agent = Agent(model, tools=[lookup_sync, lookup_async], tracer_provider=provider)
    await agent.run("look them up")
    await agent.aclose()

    spans = exporter.get_finished_spans()
    assert threads == [threads[0]]
    assert threads[0] != threading.current_thread().name  # a worker thread
    assert parent_id(only(spans, "db query")) == span_id(only(spans, "execute_tool lookup_sync"))
    assert parent_id(only(spans, "http request")) == span_id(
        only(spans, "execute_tool lookup_async")
    )


async def test_the_tool_spans_of_one_turn_overlap(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    both_in = asyncio.Barrier(2)

    async def meet(name: str) -> str:
        """Waits until the other call is running too."""
        await both_in.wait()
        return name

    model = ScriptedModel([calls(("meet", '{"name": "x"}'), ("meet", '{"name": "y"}')), "met"])
    agent = Agent(model, tools=[meet], tracer_provider=provider)
    await agent.run("meet")

    first, second = named(exporter.get_finished_spans(), "execute_tool meet")
    assert first.start_time is not None
    assert first.end_time is not None
    assert second.start_time is not None
    assert second.end_time is not None
    assert first.start_time < second.end_time
    assert second.start_time < first.end_time


async def test_concurrent_runs_of_one_agent_each_nest_their_calls_under_their_own_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """The hooks that trace calls are shared by an agent's runs: each call must still find its
    own run's span, however the runs interleave."""
    all_waiting = asyncio.Barrier(4)

    async def reply(messages: Sequence[Message], tools: object) -> AssistantMessage:
        prompt = messages[0]
        assert isinstance(prompt, UserMessage)
        if len(messages) == 1:
            await all_waiting.wait()  # every run is waiting on its model at once
            return calls(("add", f'{{"a": {prompt.text}, "b": 100}}'))
        await asyncio.sleep(0)
        return AssistantMessage(f"done {prompt.text}")

    agent = Agent(FunctionModel(reply), tools=[add], tracer_provider=provider, trace_content=True)
    results = await asyncio.gather(*(agent.run(str(n)) for n in range(4)))
    await agent.aclose()

    assert [result.output for result in results] == [f"done {n}" for n in range(4)]
    spans = exporter.get_finished_spans()
    runs = named(spans, "invoke_agent")
    assert len(runs) == 4
    prompts_seen = set()
    for run in runs:
        children = [span for span in spans if parent_id(span) == span_id(run)]
        assert sorted(span.name for span in children) == [
            "chat function",
            "chat function",
            "execute_tool add",
        ]
        # The run's own prompt, in both of its model calls and in its tool call's arguments.
        (tool_span,) = named(children, "execute_tool add")
        arguments = json.loads(attributes(tool_span)["gen_ai.tool.call.arguments"])
        prompt = str(arguments["a"])
        for chat in named(children, "chat function"):
            first = json.loads(attributes(chat)["gen_ai.input.messages"])[0]
            assert first["parts"][0]["content"] == prompt
        prompts_seen.add(prompt)
    assert prompts_seen == {"0", "1", "2", "3"}


SECRETS = {
    "prompt": "PROMPT-7f3a",
    "instructions": "INSTRUCTIONS-91bc",
    "argument": "ARGUMENT-55de",
    "result": "RESULT-0a1e",
    "tool error": "TOOLERROR-c4d2",
    "reply": "REPLY-e8f9",
}


def echo(text: str) -> str:
    """Repeats the text with a suffix."""
    return text + " RESULT-0a1e"


def refuse(text: str) -> str:
    """Always refuses."""
    raise ToolError("TOOLERROR-c4d2: " + text)


async def traced_secret_run(provider: TracerProvider, content: bool) -> None:
    model = ScriptedModel(
        [
            calls(("echo", '{"text": "ARGUMENT-55de"}'), ("refuse", '{"text": "no"}')),
            "REPLY-e8f9",
            "REPLY-e8f9 again",
        ]
    )
    agent = Agent(
        model,
        tools=[echo, refuse],
        instructions="INSTRUCTIONS-91bc",
        tracer_provider=provider,
        trace_content=content,
    )
    await agent.run("PROMPT-7f3a")
    await agent.aclose()


async def test_content_is_left_out_of_the_spans_unless_asked_for(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    await traced_secret_run(provider, content=False)
    recorded = everything_recorded(exporter.get_finished_spans())
    assert "execute_tool refuse" in recorded
    for what, secret in SECRETS.items():
        assert secret not in recorded, what


async def test_content_is_recorded_when_asked_for(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    await traced_secret_run(provider, content=True)
    spans = exporter.get_finished_spans()
    for what, secret in SECRETS.items():
        assert secret in everything_recorded(spans), what
    echo_span = only(spans, "execute_tool echo")
    assert attributes(echo_span)["gen_ai.tool.call.arguments"] == '{"text": "ARGUMENT-55de"}'
    assert attributes(echo_span)["gen_ai.tool.call.result"] == "ARGUMENT-55de RESULT-0a1e"
    refused = only(spans, "execute_tool refuse")
    assert refused.status.description == "TOOLERROR-c4d2: no"
    chat = named(spans, "chat scripted")[0]
    assert "INSTRUCTIONS-91bc" in attributes(chat)["gen_ai.system_instructions"]
    assert "PROMPT-7f3a" in attributes(chat)["gen_ai.input.messages"]


async def test_each_retry_of_a_model_call_is_an_event_on_its_one_chat_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel(
        [ModelError("overloaded", retryable=True), ModelError("overloaded", retryable=True), "ok"]
    )
    agent = Agent(model, backoff=Backoff.none(), tracer_provider=provider)
    assert (await agent.run("hi")).output == "ok"

    chat = only(exporter.get_finished_spans(), "chat scripted")
    assert [e.name for e in chat.events] == ["steadyloop.model_retry"] * 2
    assert [dict(e.attributes or {})["steadyloop.attempt"] for e in chat.events] == [2, 3]
    assert chat.status.status_code is not StatusCode.ERROR


async def test_a_failed_model_call_ends_its_span_and_the_run_span_with_the_error_type(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(ScriptedModel([ModelError("bad request")]), tracer_provider=provider)
    with pytest.raises(ModelError):
        await agent.run("hi")
    spans = exporter.get_finished_spans()
    for span in (only(spans, "chat scripted"), only(spans, "invoke_agent")):
        assert span.status.status_code is StatusCode.ERROR
        assert attributes(span)["error.type"] == "ModelError"
        assert span.status.description is None  # its text only with content


async def test_an_unknown_tool_gets_an_execute_tool_span_with_an_error_type(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([calls(("no_such_tool", "{}")), "sorry"])
    await Agent(model, tools=[add], tracer_provider=provider).run("go")
    span = only(exporter.get_finished_spans(), "execute_tool no_such_tool")
    assert attributes(span)["gen_ai.tool.name"] == "no_such_tool"
    assert attributes(span)["gen_ai.tool.call.id"] == "call_0"
    assert attributes(span)["error.type"] == "unknown_tool"
    assert span.status.status_code is StatusCode.ERROR


async def test_tool_spans_say_how_the_call_went(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    attempts = 0

    @tool(retries=2, retry_on=(ConnectionError,), max_output=10)
    def flaky() -> str:
        """Fails once, then returns a long text."""
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("reset")
        return "x" * 100

    model = ScriptedModel([calls(("flaky", "{}"), ("refuse", '{"text": "t"}')), "done"])
    agent = Agent(model, tools=[flaky, refuse], backoff=Backoff.none(), tracer_provider=provider)
    await agent.run("go")

    spans = exporter.get_finished_spans()
    flaky_span = attributes(only(spans, "execute_tool flaky"))
    assert flaky_span["steadyloop.tool.attempts"] == 2
    assert flaky_span["steadyloop.tool.truncated"] is True
    assert "error.type" not in flaky_span
    refused = only(spans, "execute_tool refuse")
    assert attributes(refused)["error.type"] == "tool_error"
    assert attributes(refused)["steadyloop.tool.truncated"] is False
    assert refused.status.status_code is StatusCode.ERROR


async def test_a_limit_stop_is_an_event_on_the_run_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel([calls(("add", '{"a": 1, "b": 1}'))] * 3)
    agent = Agent(model, tools=[add], limits=Limits(max_turns=2), tracer_provider=provider)
    with pytest.raises(TurnLimitExceeded):
        await agent.run("loop")

    run = only(exporter.get_finished_spans(), "invoke_agent")
    (event,) = run.events
    assert event.name == "steadyloop.limit"
    assert dict(event.attributes or {}) == {"steadyloop.stop_reason": "turn_limit"}
    assert attributes(run)["error.type"] == "TurnLimitExceeded"
    assert attributes(run)["steadyloop.stop_reason"] == "turn_limit"
    assert attributes(run)["steadyloop.requests"] == 2
    assert run.status.status_code is StatusCode.ERROR


def read_page(n: int) -> str:
    """Reads one page of a long document."""
    return f"page {n}: " + "lorem ipsum " * 40


async def test_a_compaction_is_an_event_on_the_run_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    turn = 0

    def pages(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        nonlocal turn
        turn += 1
        if turn > 8:
            return AssistantMessage("read it all")
        return AssistantMessage(tool_calls=(ToolCall(f"p{turn}", "read_page", f'{{"n": {turn}}}'),))

    agent = Agent(
        FunctionModel(pages),
        tools=[read_page],
        limits=Limits(max_context_tokens=1_000),
        compaction=Compaction(keep_recent=2, trigger=0.6, summarise=lambda m: "the gist"),
        tracer_provider=provider,
    )
    await agent.run("read the document")

    run = only(exporter.get_finished_spans(), "invoke_agent")
    compactions = [e for e in run.events if e.name == "steadyloop.compaction"]
    assert compactions
    facts = dict(compactions[0].attributes or {})
    assert int(str(facts["steadyloop.compaction.tokens_before"])) > int(
        str(facts["steadyloop.compaction.tokens_after"])
    )
    assert "steadyloop.compaction.summary" not in facts  # content


async def test_a_run_without_tracing_is_unchanged(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    def script() -> ScriptedModel:
        return ScriptedModel(
            [calls(("add", '{"a": 1, "b": 2}')), AssistantMessage("3", usage=Usage(9, 1))]
        )

    plain = Agent(script(), tools=[add])
    traced = Agent(script(), tools=[add], tracer_provider=provider)
    untraced, with_spans = await plain.run("sum"), await traced.run("sum")
    assert untraced == with_spans
    assert plain.effects is None
    assert len(exporter.get_finished_spans()) == 4  # the traced run's only


def test_an_untraced_run_imports_nothing_from_opentelemetry() -> None:
    code = (
        "import sys\n"
        "from steadyloop import Agent\n"
        "from steadyloop.testing import TestModel\n"
        "def add(a: int, b: int) -> int:\n"
        "    'Adds.'\n"
        "    return a + b\n"
        "Agent(TestModel(), tools=[add]).run_sync('hi')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'genai_prices'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "[]"


async def test_the_tool_span_is_current_for_the_application_s_own_tracer(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    seen: list[str] = []

    def which_span() -> str:
        """Says which span is current."""
        span = trace.get_current_span()
        seen.append(getattr(span, "name", ""))
        return "ok"

    model = ScriptedModel([calls(("which_span", "{}")), "done"])
    await Agent(model, tools=[which_span], tracer_provider=provider).run("go")
    assert seen == ["execute_tool which_span"]


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_real_adapter_s_chat_span_names_the_bare_model_and_the_response_id(
    provider: TracerProvider, exporter: InMemorySpanExporter, streamed: bool
) -> None:
    with chat_completions() as base_url:
        model = OpenAIChatModel("gpt-4.1-mini", base_url=base_url, api_key="sk-local")
        agent = Agent(model, tracer_provider=provider)
        if streamed:
            async for _ in agent.stream("hi"):
                pass
        else:
            await agent.run("hi")
        await agent.aclose()

    chat = only(exporter.get_finished_spans(), "chat gpt-4.1-mini")
    assert attributes(chat)["gen_ai.request.model"] == "gpt-4.1-mini"
    assert attributes(chat)["gen_ai.provider.name"] == "openai"
    assert attributes(chat)["gen_ai.response.id"] == "chatcmpl-local"
    assert attributes(chat)["gen_ai.usage.input_tokens"] == REPLY_USAGE["prompt_tokens"]
    assert attributes(chat)["steadyloop.cost_usd"] > 0


async def test_agents_of_different_models_on_one_provider_each_name_their_own_model(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    logged = Agent(
        ScriptedModel(["a", "b"], name=MODEL), store=tmp_path / "runs.db", tracer_provider=provider
    )
    plain = Agent(ScriptedModel(["c"], name="anthropic:claude-x"), tracer_provider=provider)
    first = await logged.run("one")
    await plain.run("two")
    second = await logged.run("three")
    await logged.aclose()

    spans = sorted(exporter.get_finished_spans(), key=lambda span: span.start_time or 0)
    runs = [attributes(span) for span in named(spans, "invoke_agent")]
    assert [run["gen_ai.request.model"] for run in runs] == [
        "gpt-4.1-mini",
        "claude-x",
        "gpt-4.1-mini",
    ]
    assert [run["gen_ai.provider.name"] for run in runs] == ["openai", "anthropic", "openai"]
    assert [run.get("steadyloop.run_id") for run in runs] == [first.run_id, None, second.run_id]
    assert [span.name for span in spans if span.name.startswith("chat")] == [
        "chat gpt-4.1-mini",
        "chat claude-x",
        "chat gpt-4.1-mini",
    ]
    chats = [attributes(span) for span in spans if span.name.startswith("chat")]
    assert [chat["gen_ai.response.model"] for chat in chats] == [
        "gpt-4.1-mini",
        "claude-x",
        "gpt-4.1-mini",
    ]
