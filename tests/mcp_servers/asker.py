"""An MCP server (official SDK, stdio) with one tool that asks the person's name (elicitation)."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("asker")


class Name(BaseModel):
    name: str


@server.tool()
async def greet(ctx: Context) -> str:
    """Greets the person by the name they give."""
    answer = await ctx.elicit("What is your name?", Name)
    if answer.action == "accept":
        return f"hello {answer.data.name}"
    return f"no name: the request was {answer.action}d"


if __name__ == "__main__":
    server.run()
