"""A tiny MCP server speaking JSON-RPC over stdio with the standard library only.

Started by the tests as a real child process. `python tiny_server.py MODE`:
- `serve`: answers initialize, tools/list and tools/call (tools below);
- `exit`: exits at once with status 3 after a line on stderr;
- `garbage`: prints non-JSON on stdout and never answers;
- `stubborn`: like `serve`, but keeps running for a minute after its stdin closes, so only
  the client's terminate/kill stops it.

Tools: `ok` (echoes its arguments), `die` (the process exits mid-call), `hang` (never answers),
`where` (its working directory and two environment variables),
`protocol-error` (a JSON-RPC error instead of a result), and oddly named ones that providers
reject as names: `calendar.respond`, `get weather`, `calendar_respond`, a 70-character name.
"""

import json
import os
import sys
import time
from typing import Any

LONG_NAME = "x" * 70
TOOLS = [
    {"name": "ok", "description": "Echoes its arguments.", "inputSchema": {"type": "object"}},
    {"name": "die", "description": "Exits mid-call.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {
        "name": "protocol-error",
        "description": "A JSON-RPC error.",
        "inputSchema": {"type": "object"},
    },
    {"name": "where", "description": "Its cwd and environment.", "inputSchema": {"type": "object"}},
    {"name": "calendar.respond", "inputSchema": {"type": "object"}},
    {"name": "calendar_respond", "inputSchema": {"type": "object"}},
    {"name": "get weather", "inputSchema": {"type": "object"}},
    {"name": LONG_NAME, "inputSchema": {"type": "object"}},
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any]) -> None:
    method, ident = request.get("method"), request.get("id")
    params = request.get("params") or {}
    if ident is None:
        return
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tiny", "version": "1.0"},
        }
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = params.get("name")
        if name == "die":
            sys.stderr.write("tiny: dying on purpose\n")
            sys.stderr.flush()
            os._exit(7)
        if name == "hang":
            return
        if name == "where":
            env = {k: os.environ.get(k) for k in ("TINY_GREETING", "TINY_SECRET")}
            text = json.dumps({"cwd": os.getcwd(), **env}, sort_keys=True)
            send(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "result": {"content": [{"type": "text", "text": text}]},
                }
            )
            return
        if name == "protocol-error":
            error = {"code": -32603, "message": "tiny: internal failure"}
            send({"jsonrpc": "2.0", "id": ident, "error": error})
            return
        text = f"{name}: {json.dumps(params.get('arguments') or {}, sort_keys=True)}"
        content = [{"type": "text", "text": text}]
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": content}})
    else:
        error = {"code": -32601, "message": f"method not found: {method}"}
        send({"jsonrpc": "2.0", "id": ident, "error": error})


def main() -> None:
    mode = sys.argv[1]
    if mode == "exit":
        sys.stderr.write("tiny: refusing to start (exit mode)\n")
        sys.exit(3)
    if mode == "garbage":
        sys.stderr.write("tiny: printing garbage\n")
        sys.stderr.flush()
        print("this is not JSON-RPC", flush=True)
        time.sleep(60)
        return
    for line in sys.stdin:
        if line.strip():
            answer(json.loads(line))
    if mode == "stubborn":
        time.sleep(60)


if __name__ == "__main__":
    main()
