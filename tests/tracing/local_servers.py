"""Two small HTTP servers on 127.0.0.1 for the command-line tests: an OTLP/HTTP trace receiver
that decodes what it is sent with `opentelemetry-proto`, and a Chat Completions endpoint that
answers every request with one priced reply (plain JSON or SSE, as asked)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from support.http import Handler, LocalServer


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    attributes: dict[str, Any]
    span_id: bytes
    parent_span_id: bytes
    service_name: str


@contextmanager
def serving(handler: type[Handler]) -> Iterator[str]:
    """Serves `handler` on a free port of 127.0.0.1 in a thread; yields the base URL."""
    with LocalServer(handler) as server:
        yield server.url


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[ReceivedSpan]]]:
    """An OTLP/HTTP collector: yields its endpoint and the list the spans it gets go to."""
    received: list[ReceivedSpan] = []

    class Receiver(Handler):
        def do_POST(self) -> None:
            body = self.read_body()
            if self.path == "/v1/traces":
                received.extend(_spans(ExportTraceServiceRequest.FromString(body)))
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_body(200, reply, "application/x-protobuf")

    with serving(Receiver) as url:
        yield url, received


def _spans(request: ExportTraceServiceRequest) -> Iterator[ReceivedSpan]:
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield ReceivedSpan(
                    span.name,
                    {a.key: _value(a.value) for a in span.attributes},
                    span.span_id,
                    span.parent_span_id,
                    str(resource.get("service.name", "")),
                )


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


REPLY_USAGE = {"prompt_tokens": 12_000, "completion_tokens": 800, "total_tokens": 12_800}


@contextmanager
def chat_completions() -> Iterator[str]:
    """A Chat Completions API that answers "hello" with `REPLY_USAGE`; yields its /v1 URL."""

    class Chat(Handler):
        def do_POST(self) -> None:
            body = self.read_json()
            base = {"id": "chatcmpl-local", "created": 0, "model": body["model"]}
            if body.get("stream"):
                chunks = [
                    {**base, "object": "chat.completion.chunk", "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": "hello"},
                         "finish_reason": "stop"}]},
                    {**base, "object": "chat.completion.chunk", "choices": [],
                     "usage": REPLY_USAGE},
                ]  # fmt: skip
                data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                self.send_body(200, data.encode(), "text/event-stream")
                return
            reply = {**base, "object": "chat.completion", "usage": REPLY_USAGE, "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "hello"},
                 "finish_reason": "stop"}]}  # fmt: skip
            self.send_json(200, reply)

    with serving(Chat) as url:
        yield url + "/v1"
