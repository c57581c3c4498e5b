"""The MCP adapter uses only the SDK's public API, so an SDK release cannot break it unannounced."""

from __future__ import annotations

import ast
import inspect
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType
from typing import Any

import pytest

from steadyloop import ConfigError
from steadyloop.mcp import MCPServer, results, schema, server, session


def imported_from_mcp(module: ModuleType) -> list[str]:
    """Every `mcp...` module path and name the module imports, as `path` or `path:name`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if alias.name.split(".")[0] == "mcp")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mcp":
            found.extend(f"{node.module}:{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("module", [server, results, schema, session])
def test_no_private_module_or_name_of_the_sdk_is_imported(module: ModuleType) -> None:
    private = [
        path
        for path in imported_from_mcp(module)
        if any(part.startswith("_") for part in path.replace(":", ".").split("."))
    ]
    assert private == []


async def test_headers_given_for_an_http_server_are_sent() -> None:
    """The HTTP transport is built from the SDK's public API and still carries the headers."""
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        mcp_server = MCPServer.http(url, headers={"Authorization": "Bearer t0k"}, start_timeout=5)
        with pytest.raises(ConfigError, match="failed to start"):
            await mcp_server.tools()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert seen[:1] == ["Bearer t0k"]
