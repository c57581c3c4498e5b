"""Reading finished spans in the tracing tests: by name, their attributes and their parents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def only(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    (span,) = named(spans, name)
    return span


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def everything_recorded(spans: Sequence[ReadableSpan]) -> str:
    """Every attribute, event and status text of the spans, as one text to search."""
    texts: list[str] = []
    for span in spans:
        texts.append(span.name)
        texts.extend(f"{k}={v!r}" for k, v in (span.attributes or {}).items())
        for event in span.events:
            texts.append(event.name)
            texts.extend(f"{k}={v!r}" for k, v in (event.attributes or {}).items())
        texts.append(span.status.description or "")
    return "\n".join(texts)
