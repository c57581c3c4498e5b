"""Fixtures for the tracing and cost tests: an SDK tracer provider whose spans stay in memory,
and no process-wide tracing left behind by a test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import steadyloop


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


@pytest.fixture(autouse=True)
def _not_instrumented() -> Iterator[None]:
    """Whatever a test turns on with `instrument()` is off again for the next one."""
    yield
    steadyloop.uninstrument()
