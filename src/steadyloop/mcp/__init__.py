"""Tools from Model Context Protocol servers (extra `mcp`): `MCPServer` is a `Toolset` whose
tools are ordinary steadyloop tools.

    server = MCPServer.stdio("npx", "-y", "@modelcontextprotocol/server-everything")
    agent = Agent("openai:gpt-4.1-mini", tools=[server, my_python_tool])

The adapter is `mcp.server`; `mcp.session` owns the SDK session and its transports, `mcp.schema`
turns the servers' tool names and schemas into ones every provider accepts, `mcp.results`
renders a tool's result as the model reads it, `mcp.resources` holds a server's resources and
prompts as steadyloop values, and `mcp.elicitation` answers a server's requests for input.
"""

from __future__ import annotations

from steadyloop.mcp.elicitation import Accept, Cancel, Decline, Elicitation
from steadyloop.mcp.resources import Prompt, PromptArgument, Resource, ResourceTemplate
from steadyloop.mcp.server import MCPServer, MCPTool

__all__ = [
    "Accept",
    "Cancel",
    "Decline",
    "Elicitation",
    "MCPServer",
    "MCPTool",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
]
