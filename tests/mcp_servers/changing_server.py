"""An MCP server built with the official SDK whose tool list changes while a client uses it.

`python changing_server.py` serves stdio; `python changing_server.py http PORT TOKEN` serves
streamable HTTP at http://127.0.0.1:PORT/mcp and answers 401 to any request without the header
`Authorization: Bearer TOKEN`.

Tools: `unlock` adds the tool `vault`, `lock` removes it, `reword` gives `vault` a new
description, `nudge` says the list changed without changing it; each sends
`notifications/tools/list_changed`. `slow` reports progress three times before answering.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing")


def vault(code: str) -> str:
    """Opens the vault with a code."""
    return f"the vault opened with {code}"


@server.tool()
async def unlock(ctx: Context) -> str:
    """Makes the vault tool available."""
    server.add_tool(vault)
    await ctx.request_context.session.send_tool_list_changed()
    return "unlocked"


@server.tool()
async def lock(ctx: Context) -> str:
    """Takes the vault tool away."""
    server.remove_tool("vault")
    await ctx.request_context.session.send_tool_list_changed()
    return "locked"


@server.tool()
async def reword(ctx: Context) -> str:
    """Gives the vault tool a new description."""
    server.remove_tool("vault")
    server.add_tool(vault, description="Opens the big vault with a code.")
    await ctx.request_context.session.send_tool_list_changed()
    return "reworded"


@server.tool()
async def nudge(ctx: Context) -> str:
    """Says the tools changed, without changing them."""
    await ctx.request_context.session.send_tool_list_changed()
    await ctx.request_context.session.send_tool_list_changed()
    return "nudged"


@server.tool()
async def slow(ctx: Context) -> str:
    """Reports progress three times, then answers."""
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"step {step}")
    return "done slowly"


def serve_http(port: int, token: str) -> None:
    """Streamable HTTP behind a bearer-token check."""
    import uvicorn
    from starlette.responses import JSONResponse
    from starlette.types import ASGIApp, Receive, Scope, Send

    app = server.streamable_http_app()

    def checked(inner: ASGIApp) -> ASGIApp:
        async def guard(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                headers = dict(scope["headers"])
                if headers.get(b"authorization") != f"Bearer {token}".encode():
                    await JSONResponse({"error": "unauthorized"}, status_code=401)(
                        scope, receive, send
                    )
                    return
            await inner(scope, receive, send)

        return guard

    uvicorn.run(checked(app), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        serve_http(int(sys.argv[2]), sys.argv[3])
    else:
        server.run()
