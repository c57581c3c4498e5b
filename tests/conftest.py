"""Fixtures every test folder may ask for: the session's Postgres server, a fresh run log on
each store, and spans of the real OpenTelemetry SDK kept in memory. Helpers that are not
fixtures live in the `support` package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support import postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A Postgres server for the session; skipped (with the reason) where none can start."""
    yield from postgres.postgres_server()


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a fresh run log goes: a SQLite path, or a Postgres URL of a new database."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return postgres.new_database(request.getfixturevalue("postgres_server"))


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans of the real OpenTelemetry SDK, kept in memory."""
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.shutdown()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """An SDK tracer provider whose spans go to `exporter`."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()
