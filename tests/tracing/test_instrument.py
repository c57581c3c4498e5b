"""`steadyloop.instrument()`: the process-wide switch, decided as each run starts."""

from __future__ import annotations

import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import steadyloop
from steadyloop import Agent, ConfigError
from steadyloop.testing import ScriptedModel
from tracing.span_checks import attributes, only


def agent(*replies: str, tracer_provider: TracerProvider | None = None) -> Agent:
    return Agent(ScriptedModel(replies or ["hello"]), tracer_provider=tracer_provider)


async def test_instrument_traces_agents_made_before_it_until_uninstrument(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    early = agent("one", "two", "three")
    await early.run("untraced")
    assert exporter.get_finished_spans() == ()

    steadyloop.instrument(provider)
    await early.run("traced")
    assert [s.name for s in exporter.get_finished_spans()] == ["chat scripted", "invoke_agent"]

    steadyloop.uninstrument()
    await early.run("untraced again")
    assert len(exporter.get_finished_spans()) == 2


async def test_instrument_include_content_records_the_prompt(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    steadyloop.instrument(provider, include_content=True)
    await agent().run("the secret prompt")
    chat = only(exporter.get_finished_spans(), "chat scripted")
    assert "the secret prompt" in attributes(chat)["gen_ai.input.messages"]


async def test_an_agent_s_own_provider_traces_only_that_agent(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    await agent(tracer_provider=provider).run("traced")
    await agent().run("not traced")
    assert [s.name for s in exporter.get_finished_spans()] == ["chat scripted", "invoke_agent"]


async def test_an_agent_s_own_provider_wins_over_instrument(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    other = InMemorySpanExporter()
    elsewhere = TracerProvider()
    elsewhere.add_span_processor(SimpleSpanProcessor(other))
    steadyloop.instrument(elsewhere)
    await agent(tracer_provider=provider).run("mine")
    assert len(exporter.get_finished_spans()) == 2
    assert other.get_finished_spans() == ()


def test_instrument_without_opentelemetry_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    with pytest.raises(ConfigError, match=r"steadyloop\[otel\]"):
        steadyloop.instrument()


def test_instrument_finds_a_global_provider_set_after_it() -> None:
    # The global provider can be set once per process: this runs in a process of its own.
    code = """
import asyncio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import steadyloop
from steadyloop import Agent
from steadyloop.testing import ScriptedModel

agent = Agent(ScriptedModel(["one", "two"]))
steadyloop.instrument()
agent.run_sync("before any provider")
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
agent.run_sync("after")
print(sorted(span.name for span in exporter.get_finished_spans()))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "['chat scripted', 'invoke_agent']"
