"""Turning OpenTelemetry tracing on: for every agent (`instrument()`) or for one agent
(`Agent(tracer_provider=...)`).

`instrument()` is the application's explicit, process-wide opt-in, like configuring logging: it
covers the agents made before it too, and each run asks, when it starts, whether it is traced.
Untraced runs pay one function call for that and import nothing from OpenTelemetry; the spans
themselves are made in `steadyloop.tracing.spans`. Nothing is exported unless the application
configured an OpenTelemetry SDK: the API alone (`pip install 'steadyloop[otel]'`) records nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from steadyloop.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from steadyloop.models.base import Model
    from steadyloop.tracing.spans import Tracing

__all__ = ["instrument", "run_tracing", "uninstrument"]

MISSING_OTEL_TEXT = (
    "tracing needs OpenTelemetry: pip install 'steadyloop[otel]' (and an OpenTelemetry SDK with "
    "an exporter, such as opentelemetry-sdk, to send the spans somewhere)"
)


@dataclass(frozen=True, slots=True)
class _Instrumented:
    tracer_provider: TracerProvider | None
    include_content: bool


# The one process-wide setting, as logging's configuration is; None: not instrumented.
_instrumented: _Instrumented | None = None


def instrument(
    tracer_provider: TracerProvider | None = None, *, include_content: bool = False
) -> None:
    """Traces every agent's runs, those of agents made earlier included.

    Args:
        tracer_provider: where the spans go (None: the global provider, looked up as each run
            starts, so one the application sets later is used).
        include_content: also record prompts, instructions, replies, tool arguments and results
            and the texts of tool errors; off, spans carry only names, ids, counts and kinds.

    Raises `ConfigError` when OpenTelemetry is not installed.
    """
    try:
        import opentelemetry.trace  # noqa: F401 - only whether it is there
    except ModuleNotFoundError as exc:
        raise ConfigError(MISSING_OTEL_TEXT) from exc
    global _instrumented
    _instrumented = _Instrumented(tracer_provider, include_content)


def uninstrument() -> None:
    """Undoes `instrument()`: runs that start from now on are not traced (unless their agent
    has its own `tracer_provider`)."""
    global _instrumented
    _instrumented = None


def run_tracing(
    tracer_provider: TracerProvider | None, trace_content: bool, model: Model
) -> Tracing | None:
    """The tracing of a run that starts now: the agent's own provider, else `instrument()`'s;
    None when neither traces it."""
    content = trace_content
    if tracer_provider is None:
        instrumented = _instrumented
        if instrumented is None:
            return None
        tracer_provider = instrumented.tracer_provider
        content = content or instrumented.include_content
    from steadyloop.tracing.spans import Tracing

    return Tracing(tracer_provider, content, model)
