"""`steadyloop mcp serve`: an agent (or its tools alone) served to MCP clients such as editors.

On stdio by default, where stdout carries only the protocol (everything else goes to stderr), or
over streamable HTTP with `--http PORT`. Ctrl-C, SIGTERM or the end of stdin stop it and the MCP
servers it started. The SDK is imported only when the command runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.util
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import click

from steadyloop.cli.common import Failure, _sigterm_cancels_this_task, guard
from steadyloop.cli.options import agent_tools_options, store_option

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.mcp.serve import AnyServer

__all__ = ["mcp_group"]


@click.group(name="mcp")
def mcp_group() -> None:
    """Model Context Protocol: serve an agent, or tools, to MCP clients."""


@mcp_group.command()
@agent_tools_options
@click.option("--model", default=None, help="model spec (default: $STEADYLOOP_MODEL)")
@click.option(
    "--agent",
    "factory",
    default=None,
    metavar="MODULE:FUNCTION",
    help="a function that returns the Agent to serve (the current directory is "
    "importable); instead of --tools, --mcp, --model and --instructions",
)
@click.option("--instructions", default=None, help="the system prompt")
@click.option(
    "--max-turns",
    type=click.IntRange(min=1),
    default=None,
    help="model calls per request (default: 20, or the --agent's own)",
)
@click.option("--name", default="agent", show_default=True, help="the name of the agent's tool")
@click.option(
    "--description",
    default=None,
    help="the agent tool's description (default: one naming the agent's tools)",
)
@click.option(
    "--http",
    "port",
    type=click.IntRange(0, 65535),
    default=None,
    metavar="PORT",
    help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (0: a free port)",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="the address to listen on with --http"
)
@click.option(
    "--tools-only",
    is_flag=True,
    help="serve the tools themselves (no model, no run log) instead of the agent",
)
@click.option("--no-log", is_flag=True, help="do not write the run log")
@store_option
def serve(tool_files: tuple[str, ...], mcp: tuple[str, ...], mcp_url: tuple[str, ...],
          model: str | None, factory: str | None, instructions: str | None,
          max_turns: int | None, name: str, description: str | None, port: int | None,
          host: str, tools_only: bool, no_log: bool, store_url: str | None) -> None:  # fmt: skip
    """Serve an agent as one MCP tool taking a prompt (each call one logged run), on stdio."""
    if importlib.util.find_spec("mcp") is None:
        raise Failure("serving over MCP needs the mcp SDK: pip install 'steadyloop[mcp]'")
    if factory is not None and (tool_files or mcp or mcp_url or model or instructions):
        raise click.UsageError(
            "give --agent or --tools/--mcp/--mcp-url/--model/--instructions, not both: the "
            "agent has its own"
        )
    if tools_only and (factory or model or instructions or max_turns):
        raise click.UsageError(
            "--tools-only serves the tools without a model: drop --agent, --model, "
            "--instructions and --max-turns"
        )
    if tools_only and not (tool_files or mcp or mcp_url):
        raise click.UsageError("--tools-only needs tools: give --tools, --mcp or --mcp-url")
    # Whatever the tool files or the factory print while loading must not reach the protocol.
    with contextlib.redirect_stdout(sys.stderr):
        if tools_only:
            server, close = _tools_server(tool_files, mcp, mcp_url)
        else:
            agent = _agent(factory, tool_files, mcp, mcp_url, model, instructions, max_turns,
                           no_log, store_url)  # fmt: skip
            server, close = agent.as_mcp_server(name, description=description), agent.aclose

    async def go() -> None:
        from steadyloop.mcp.serve import serve_http, serve_stdio

        try:
            if port is None:
                with _sigterm_cancels_this_task():
                    await serve_stdio(server)
            else:
                say = lambda url: click.echo(f"serving MCP on {url}", err=True)  # noqa: E731
                await serve_http(server, host=host, port=port, say=say)
        finally:
            await close()

    try:
        asyncio.run(go())
    except asyncio.CancelledError:  # SIGTERM
        pass
    except OSError as exc:  # the port is taken, the host is not ours
        raise Failure(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _agent(factory: str | None, tool_files: tuple[str, ...], mcp: tuple[str, ...],
           mcp_url: tuple[str, ...], model: str | None, instructions: str | None,
           max_turns: int | None, no_log: bool, store_url: str | None) -> Agent[Any]:  # fmt: skip
    """The agent to serve, logging to `--store` (default: the usual run log) unless `--no-log`;
    an `--agent` with a log of its own keeps it when no `--store` is given."""
    from steadyloop.cli.setup import build_agent, open_store
    from steadyloop.limits import Limits

    if factory is not None:
        from steadyloop.batch.worker import build_agent as from_factory
        from steadyloop.cli.batch import importable_here

        importable_here()
        agent = guard(lambda: from_factory(factory))
        if max_turns is not None:
            agent.limits = dataclasses.replace(agent.limits, max_turns=max_turns)
        if no_log:
            agent.store = None
        elif store_url is not None or agent.store is None:
            agent.store = guard(lambda: open_store(store_url))
        return agent
    return guard(
        lambda: build_agent(
            model=model, tool_files=tool_files, mcp=mcp, mcp_url=mcp_url,
            instructions=instructions, limits=Limits(max_turns=max_turns or 20),
            store=None if no_log else open_store(store_url),
        )
    )  # fmt: skip


def _tools_server(
    tool_files: tuple[str, ...], mcp: tuple[str, ...], mcp_url: tuple[str, ...]
) -> tuple[AnyServer, Callable[[], Awaitable[None]]]:
    """The server of the tools alone, and what stops the MCP servers it may start."""
    from steadyloop.cli.setup import load_tools, mcp_servers
    from steadyloop.mcp.serve import tools_server

    tools = guard(lambda: load_tools(tool_files))
    toolsets = guard(lambda: mcp_servers(mcp, mcp_url))

    async def close() -> None:
        for toolset in toolsets:
            await toolset.aclose()

    return tools_server(tools, toolsets), close
