"""Two small HTTP servers on 127.0.0.1 for the command-line tests: an OTLP/HTTP trace receiver
that decodes what it is sent with `opentelemetry-proto`, and a Chat Completions endpoint that
answers every request with one priced reply (plain JSON or SSE, as asked)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    attributes: dict[str, Any]
    span_id: bytes
    parent_span_id: bytes
    service_name: str


class _Server(ThreadingHTTPServer):
    daemon_threads = True


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serves `handler` on a free port of 127.0.0.1 in a thread; yields the base URL."""
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[ReceivedSpan]]]:
    """An OTLP/HTTP collector: yields its endpoint and the list the spans it gets go to."""
    received: list[ReceivedSpan] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path == "/v1/traces":
                received.extend(_spans(ExportTraceServiceRequest.FromString(body)))
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

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

    class Chat(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
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
                self._send(data.encode(), "text/event-stream")
                return
            reply = {**base, "object": "chat.completion", "usage": REPLY_USAGE, "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "hello"},
                 "finish_reason": "stop"}]}  # fmt: skip
            self._send(json.dumps(reply).encode(), "application/json")

        def _send(self, data: bytes, content_type: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Chat) as url:
        yield url + "/v1"
