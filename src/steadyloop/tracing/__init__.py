"""OpenTelemetry tracing (extra `otel`): `instrument()` turns it on for every agent,
`uninstrument()` turns it off again; `Agent(tracer_provider=...)` traces one agent.

`tracing.setup` decides, when a run starts, whether it is traced; the spans themselves are made
in `tracing.spans`, which is only imported for a traced run.
"""

from __future__ import annotations

from steadyloop.tracing.setup import instrument, uninstrument

__all__ = ["instrument", "uninstrument"]
