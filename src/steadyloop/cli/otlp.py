"""The command line's traces: spans sent over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

The standard OpenTelemetry variables apply (`OTEL_EXPORTER_OTLP_ENDPOINT` or
`..._TRACES_ENDPOINT`, `..._HEADERS`, `OTEL_SERVICE_NAME`, default "steadyloop"), and
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` records prompts, replies and tool
arguments and results too. The SDK and the exporter are the user's to install, not steadyloop's
dependencies: without them a line on stderr says what to install and the run goes on untraced.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import click

from steadyloop.tracing import instrument, uninstrument

__all__ = ["otlp_export"]

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
MISSING_TEXT = (
    "note: OTEL_EXPORTER_OTLP_ENDPOINT is set, but this run is not traced: the OpenTelemetry "
    "SDK and its OTLP exporter are not installed; pip install 'steadyloop[otel]' "
    "opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"
)


@contextlib.contextmanager
def otlp_export() -> Iterator[None]:
    """Traces the runs started in the block to the OTLP endpoint, if one is set; the spans are
    all sent by the time the block is left."""
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        yield
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ModuleNotFoundError:
        click.echo(MISSING_TEXT, err=True)
        yield
        return
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "steadyloop"}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    content = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    instrument(provider, include_content=content.strip().lower() == "true")
    try:
        yield
    finally:
        uninstrument()
        provider.shutdown()
