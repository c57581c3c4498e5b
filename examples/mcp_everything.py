"""An agent using the tools of a real MCP server: the reference server "everything".

Run it offline (needs Node.js; npx fetches the pinned server on first use):
    python examples/mcp_everything.py --model test
With a model:
    python examples/mcp_everything.py --model openai:gpt-4.1-mini "What is 2 + 3? Then echo hi."
With a copy installed by `npm install @modelcontextprotocol/server-everything`:
    python examples/mcp_everything.py --server 'node node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio'
"""  # noqa: E501

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys

from steadyloop import Agent, ConfigError, LimitExceeded
from steadyloop.mcp import MCPServer

SERVER = "npx -y @modelcontextprotocol/server-everything@2026.8.31 stdio"
# The server also has tools that print its environment or fetch URLs: never offer those.
TOOLS = {"echo", "get-sum", "get-tiny-image", "get-structured-content"}


async def answer(model: str | None, server_command: str, prompt: str) -> str:
    """Starts the server, runs the agent once, and stops both."""
    command, *args = shlex.split(server_command)
    # npx may download the server first: allow for that in the start-up time.
    server = MCPServer.stdio(command, *args, timeout=30, start_timeout=120, include=TOOLS)
    async with Agent(model, tools=[server], instructions="Use the tools to answer.") as agent:
        result = await agent.run(prompt)
    return result.output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model spec, e.g. test or openai:gpt-4.1")
    parser.add_argument("--server", default=SERVER, help=f"server command (default: {SERVER})")
    parser.add_argument("prompt", nargs="?", default="Add 2 and 3, then echo 'hello'.")
    args = parser.parse_args(argv)
    try:
        print(asyncio.run(answer(args.model, args.server, args.prompt)))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LimitExceeded as exc:
        print(f"stopped: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
