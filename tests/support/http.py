"""The plumbing of the tests' local HTTP servers: a threaded server on a free port of
127.0.0.1 that lives for a `with` block, and a quiet request handler with the few ways to
read a request and send an answer the fakes need."""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    """A threaded server whose handler threads do not hold the interpreter open, and which
    says nothing when a client hangs up (a test that timed out): anything else is reported."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LocalServer:
    """`handler` served on a free port of 127.0.0.1 in a thread, for a `with` block; `url` is
    its root."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], poll_interval: float = 0.05) -> None:
        self._server = QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class Handler(BaseHTTPRequestHandler):
    """A request handler that logs nothing (the tests read what the fake recorded)."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def read_body(self) -> bytes:
        """The request's body, as long as its Content-Length says."""
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def read_json(self) -> Any:
        """The request's body as JSON (an empty body reads as `{}`)."""
        return json.loads(self.read_body() or b"{}")

    def send_body(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, str] = {}
    ) -> None:
        """A whole answer: status, content type and length, `headers`, then `data`."""
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status: int, data: Any, headers: Mapping[str, str] = {}) -> None:
        """`data` as a JSON answer."""
        self.send_body(status, json.dumps(data).encode(), "application/json", headers)


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: a server that is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
