"""S9's two probes, each run in a fresh interpreter: how long until an agent can use an MCP server.

    python mcp_probe.py sdk COMMAND ARGS...          the official SDK's minimal client
    python mcp_probe.py steadyloop COMMAND ARGS...   a steadyloop agent with that server

`sdk` imports the SDK, starts the server over stdio, initializes the session and lists the
tools. `steadyloop` imports steadyloop, makes an agent with the server's tools and runs it; its
fake model notes when it is first called, with the tools in its request. Each prints one line,
`ready <unix time> <tool count>`, at that moment; the parent times from just before it spawned
the process, so interpreter start-up and imports count for both.
"""

from __future__ import annotations

import asyncio
import sys
import time


async def sdk(command: str, args: list[str]) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import ElicitResult

    async def declines(context: object, params: object) -> ElicitResult:
        return ElicitResult(action="decline")

    # Declares elicitation, as steadyloop does, so the server offers both clients the same tools.
    server = StdioServerParameters(command=command, args=args)
    async with (
        stdio_client(server) as (read, write),
        ClientSession(read, write, elicitation_callback=declines) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        print(f"ready {time.time()} {len(tools.tools)}", flush=True)


async def steadyloop(command: str, args: list[str]) -> None:
    from steadyloop import Agent, AssistantMessage
    from steadyloop.mcp import MCPServer
    from steadyloop.models.base import Model, ModelRequest

    class FirstCall(Model):
        name = "probe"

        async def request(self, request: ModelRequest) -> AssistantMessage:
            print(f"ready {time.time()} {len(request.tools)}", flush=True)
            return AssistantMessage("done", stop_reason="end_turn")

    async with Agent(FirstCall(), tools=[MCPServer.stdio(command, *args)]) as agent:
        await agent.run("go")


def main() -> None:
    mode, command, *args = sys.argv[1:]
    probe = {"sdk": sdk, "steadyloop": steadyloop}[mode]
    asyncio.run(probe(command, args))


if __name__ == "__main__":
    main()
