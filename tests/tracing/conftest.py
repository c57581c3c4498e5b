"""No process-wide tracing is left behind by a tracing test (the in-memory exporter and tracer
provider are the root conftest's `exporter` and `provider`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import steadyloop


@pytest.fixture(autouse=True)
def _not_instrumented() -> Iterator[None]:
    """Whatever a test turns on with `instrument()` is off again for the next one."""
    yield
    steadyloop.uninstrument()
