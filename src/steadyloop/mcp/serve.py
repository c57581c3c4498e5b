"""Serving steadyloop over MCP (extra `mcp`): an agent as one tool, or a set of tools as they are.

    server = agent.as_mcp_server("shop")    # the MCP SDK's MCPServer
    server.run()                            # on stdio; .streamable_http_app() is its ASGI app

`agent_server` gives the agent one tool taking `{"prompt": string}`: each call is one run of the
agent (logged when the agent has a run log), answered with the output as text and
`structuredContent` `{"output", "stop_reason", "run_id"}`. A run that did not answer (a limit,
a pause for approval, a steadyloop error) is an error result (`isError`) saying why, with the
partial answer when there is one, so the caller never takes a stopped run for an answer. A caller
that sends a progress token hears of each model call (progress = turn, total = `max_turns`).

`tools_server` serves tools themselves, no model: each keeps its name, description and schema,
and a call runs as a model's call would (validation, timeout, truncation), every failure an error
result with the text a model reads. `serve_stdio` and `serve_http` run either server until it is
stopped; the command line's `steadyloop mcp serve` is built on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import mcp.types as mt
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from pydantic import Field

from steadyloop.config import MAX_TOOL_OUTPUT, TOOL_TIMEOUT
from steadyloop.dispatch import Dispatcher
from steadyloop.errors import LimitExceeded, SteadyloopError
from steadyloop.events import Event, ModelRequestStarted
from steadyloop.messages import ArgumentsError, ToolCall, ToolResult
from steadyloop.result import RunResult, as_json
from steadyloop.retry import Backoff
from steadyloop.tools import Tool, Toolset
from steadyloop.toolthreads import ToolThreads

if TYPE_CHECKING:
    from steadyloop.agent import Agent

__all__ = ["agent_server", "serve_http", "serve_stdio", "tools_server"]

logger = logging.getLogger("steadyloop.mcp")

AnyServer = MCPServer | Server[Any]
Prompt = Annotated[str, Field(description="the task or question for the agent, in plain words")]


def agent_server(
    agent: Agent[Any], name: str = "agent", *, description: str | None = None, deps: Any = None
) -> MCPServer:
    """The MCP SDK's `MCPServer` with one tool, `name`, that runs `agent` on its `prompt`
    (`deps` given to each run); see the module's docstring for the answer's form."""

    async def ask(prompt: Prompt, ctx: Context) -> mt.CallToolResult:
        return await _run(agent, prompt, deps, ctx)

    server = MCPServer(name, log_level="WARNING")
    server.add_tool(
        ask, name=name, description=description or _describe(agent), structured_output=False
    )
    return server


def _describe(agent: Agent[Any]) -> str:
    """The default description: what the agent can do, by its tools' names."""
    names = [tool.name for tool in agent.tools]
    servers = len(agent.toolsets)
    if servers:
        names.append(f"the tools of {servers} MCP server{'s' if servers > 1 else ''}")
    can = f" It can use: {', '.join(names)}." if names else ""
    return (
        "Ask an AI agent to do a task and get its answer back. Give the whole task in `prompt`: "
        f"the agent sees nothing else.{can}"
    )


async def _run(agent: Agent[Any], prompt: str, deps: Any, ctx: Context) -> mt.CallToolResult:
    """One run of `agent` on `prompt`, as a tool result."""
    progress = _Progress(ctx, agent.limits.max_turns)
    try:
        result = await agent.run(prompt, deps=deps, on_event=progress.on_event)
    except LimitExceeded as exc:
        return _stopped(exc)
    except SteadyloopError as exc:
        return _error(f"error: {exc}")
    finally:
        await progress.sent()
    if result.stop_reason == "approval":
        return _waiting(result)
    output = as_json(result.output)
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return mt.CallToolResult(content=[_text(text)], structured_content=_facts(result, output))


def _facts(result: RunResult[Any], output: Any) -> dict[str, Any]:
    return {"output": output, "stop_reason": result.stop_reason, "run_id": result.run_id}


def _stopped(exc: LimitExceeded) -> mt.CallToolResult:
    """A limit stop: its message, then the last reply's text when it had some."""
    partial = exc.result
    text = f"stopped: {exc}"
    if partial.text:
        text += f"\n\npartial answer:\n{partial.text}"
    facts = _facts(partial, as_json(partial.output))
    return mt.CallToolResult(content=[_text(text)], structured_content=facts, is_error=True)


def _waiting(result: RunResult[Any]) -> mt.CallToolResult:
    """A run paused for approval: the waiting calls, and how to decide them."""
    lines = ["paused: these calls wait for a person's approval:"]
    lines += [f"  {call.call_id}  {call.name}" for call in result.pending]
    if result.run_id is None:
        lines.append("the run was not logged, so it cannot be resumed")
    else:
        first = result.pending[0].call_id
        lines.append(f"continue with: steadyloop resume {result.run_id} --approve {first}")
    facts = _facts(result, None)
    return mt.CallToolResult(
        content=[_text("\n".join(lines))], structured_content=facts, is_error=True
    )


def _error(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[_text(text)], is_error=True)


def _text(text: str) -> mt.TextContent:
    return mt.TextContent(type="text", text=text)


class _Progress:
    """Tells the caller of each model call of a run, in order (a no-op without its token).

    Events arrive through a sync callback; each notification is a task that first waits for
    the one before, so they leave in turn order, and `sent()` waits for the last of them before
    the answer goes out.
    """

    def __init__(self, ctx: Context, total: int) -> None:
        self._ctx = ctx
        self._total = total
        self._last: asyncio.Task[None] | None = None

    def on_event(self, event: Event) -> None:
        if isinstance(event, ModelRequestStarted):
            self._last = asyncio.ensure_future(self._send(self._last, event.turn))

    async def _send(self, before: asyncio.Task[None] | None, turn: int) -> None:
        if before is not None:
            await before
        try:
            await self._ctx.report_progress(turn, self._total, f"model call {turn}")
        except Exception as exc:  # a caller gone away: the run goes on regardless
            logger.debug("progress notification not sent: %s", exc)

    async def sent(self) -> None:
        if self._last is not None:
            await asyncio.shield(self._last)


def tools_server(
    tools: Sequence[Tool], toolsets: Sequence[Toolset] = (), *, name: str = "steadyloop"
) -> Server[Any]:
    """An MCP server offering `tools` (and those of `toolsets`, started on first use) as they
    are, each call run with steadyloop's default timeout and truncation."""
    threads = ToolThreads()

    async def dispatcher() -> Dispatcher:
        started = await asyncio.gather(*(toolset.tools() for toolset in toolsets))
        every = [*tools, *(tool for some in started for tool in some)]
        return Dispatcher(
            {tool.name: tool for tool in every}, tool_timeout=TOOL_TIMEOUT,
            max_output=MAX_TOOL_OUTPUT, backoff=Backoff(), executor=threads.get,
        )  # fmt: skip

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        listed = (await dispatcher()).tools
        return mt.ListToolsResult(tools=[_listed(tool) for tool in listed])

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        tools = await dispatcher()
        call = ToolCall("mcp", params.name, dict(params.arguments or {}))
        gated = next((t for t in tools.tools if t.name == call.name and t.approve), None)
        if gated is not None and _needs_approval(gated, call):
            return _error(
                f"not run: {call.name} asks for a person's approval of this call, and a tool "
                "served on its own has no one to ask; call it through the agent instead"
            )
        (outcome,) = (await tools.run([call])).outcomes
        return _result(outcome.result)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def _listed(tool: Tool) -> mt.Tool:
    spec = tool.spec
    return mt.Tool(name=spec.name, description=spec.description, input_schema=dict(spec.parameters))


def _needs_approval(tool: Tool, call: ToolCall) -> bool:
    """Whether this call of a gated tool waits for a decision; bad arguments do not (the
    dispatcher answers them)."""
    try:
        arguments = call.parsed_arguments()
        tool.bind(arguments)
    except ArgumentsError:
        return False
    return tool.needs_approval(arguments)


def _result(result: ToolResult) -> mt.CallToolResult:
    """A tool's result as the model would read it, with its images."""
    content: list[mt.ContentBlock] = [_text(result.content)]
    content += [
        mt.ImageContent(type="image", data=image.data, mime_type=image.media_type)
        for image in result.images
        if image.data
    ]
    return mt.CallToolResult(content=content, is_error=result.is_error)


async def serve_stdio(server: AnyServer) -> None:
    """Serves `server` on this process's stdin and stdout until stdin ends."""
    if isinstance(server, MCPServer):
        await server.run_stdio_async()
        return
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_http(
    server: AnyServer, *, host: str, port: int, say: Callable[[str], None]
) -> None:
    """Serves `server` over streamable HTTP at `http://HOST:PORT/mcp` (port 0: a free one)
    until SIGINT or SIGTERM; `say(url)` once it listens. On a loopback host, requests naming
    another host are refused (DNS-rebinding protection)."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/mcp"

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                say(url)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            """SIGINT and SIGTERM stop the server gracefully, and that is all: uvicorn's own
            raises the signal again afterwards, which would kill the process before the
            caller's cleanup (stopping its MCP servers) runs."""
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            stops = (signal.SIGINT, signal.SIGTERM)
            before = {number: signal.signal(number, self.handle_exit) for number in stops}
            try:
                yield
            finally:
                for number, handler in before.items():
                    signal.signal(number, handler)

    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    with sock:
        await Announcing(config).serve(sockets=[sock])
