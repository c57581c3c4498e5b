"""Tools from Model Context Protocol servers, through the official `mcp` SDK (extra `mcp`).

    server = MCPServer.stdio("npx", "-y", "@modelcontextprotocol/server-everything")
    agent = Agent("openai:gpt-4.1-mini", tools=[server, my_python_tool])

An `MCPServer` is a `Toolset`: the agent starts it before a run's first model call (a server that
cannot start raises `ConfigError` with the end of its stderr) and stops it in `Agent.aclose()`;
`async with server:` works too. Its tools are ordinary steadyloop tools: same timeouts,
truncation, parallel calls and error results as Python tools.

The SDK's session and transport are context managers whose cancel scopes must stay in the task
that entered them, so one background task per server owns them for the session's whole life
while calls are made from any task. Stopping the server ends that task, and the SDK's shielded
shutdown closes stdin, then terminates the server's process group: no orphaned processes, also
when the run fails or is cancelled (Ctrl-C).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shlex
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from steadyloop.errors import ConfigError, ToolError
from steadyloop.mcp.results import render_result
from steadyloop.mcp.schema import input_schema, tool_names
from steadyloop.mcp.session import Http, Session, Stdio, Transport
from steadyloop.tools import BoundCall, Tool, ToolOutput, Toolset, ToolSpec

if TYPE_CHECKING:
    import mcp
    from mcp.types import CallToolResult

__all__ = ["MCPServer", "MCPTool", "servers_from_cli"]

DEFAULT_START_TIMEOUT = 30.0


class MCPTool(Tool):
    """One tool of an MCP server; `remote_name` is its name on the server.

    The server validates the arguments, so `bind` accepts any object and a bad call comes back
    as the server's error result for the model to read.
    """

    def __init__(self, server: MCPServer, spec: ToolSpec, remote_name: str) -> None:
        super().__init__(spec, timeout=server.timeout)
        self.server = server
        self.remote_name = remote_name

    def bind(self, arguments: Mapping[str, Any]) -> BoundCall:
        return BoundCall(self.server.call, {"name": self.remote_name, "arguments": arguments}, True)

    def render(self, value: Any) -> ToolOutput:
        return render_result(value)


class MCPServer(Toolset):
    """An MCP server whose tools the agent may call; build it with `stdio()` or `http()`.

    Args (of both constructors):
        timeout: seconds each call may take (None: the agent's `tool_timeout`).
        start_timeout: seconds to start the server, initialize and list its tools.
        prefix: put before every tool name (`prefix_name`), to tell two servers' tools apart.
        include: only these tools (MCP names) are offered to the model.
        exclude: these tools (MCP names) are never offered to the model.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        prefix: str | None = None,
        include: Collection[str] | None = None,
        exclude: Collection[str] = (),
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"MCP server timeout must be > 0 seconds, got {timeout}")
        if start_timeout <= 0:
            raise ConfigError(f"MCP server start_timeout must be > 0 seconds, got {start_timeout}")
        if importlib.util.find_spec("mcp") is None:
            raise ConfigError("MCP servers need the mcp SDK: pip install 'steadyloop[mcp]'")
        self.transport = transport
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.prefix = prefix
        self.include = frozenset(include) if include is not None else None
        self.exclude = frozenset(exclude)
        self._session: Session | None = None
        self._tools: tuple[MCPTool, ...] = ()
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        prefix: str | None = None,
        include: Collection[str] | None = None,
        exclude: Collection[str] = (),
    ) -> MCPServer:
        """A server run as a child process speaking MCP on its stdin and stdout.

        `env` is added to a minimal environment (PATH, HOME, USER, ...), not to ours, so
        secrets in our environment do not leak to the server unless passed here.
        """
        transport = Stdio(
            command, tuple(args), dict(env) if env else None, os.fspath(cwd) if cwd else None
        )
        return cls(
            transport,
            timeout=timeout,
            start_timeout=start_timeout,
            prefix=prefix,
            include=include,
            exclude=exclude,
        )

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        prefix: str | None = None,
        include: Collection[str] | None = None,
        exclude: Collection[str] = (),
    ) -> MCPServer:
        """A server reached over streamable HTTP at `url` (usually ending in `/mcp`)."""
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"MCP server URL must start with http:// or https://, got {url!r}")
        transport = Http(url, dict(headers) if headers else None)
        return cls(
            transport,
            timeout=timeout,
            start_timeout=start_timeout,
            prefix=prefix,
            include=include,
            exclude=exclude,
        )

    @property
    def label(self) -> str:
        """The command line or URL, for messages."""
        return self.transport.label()

    async def tools(self) -> Sequence[MCPTool]:
        """Starts the server if it is not running in this event loop, and lists its tools."""
        async with self._start_lock():
            session = self._session
            if session is not None and session.usable():
                return self._tools
            if session is not None:
                self._session = None
                await session.close()
            session = await Session.start(self.transport, self.start_timeout)
            try:
                tools = self._make_tools(session.listing)
            except BaseException:
                await session.close()
                raise
            self._session, self._tools = session, tools
            return tools

    def _start_lock(self) -> asyncio.Lock:
        """One start at a time per event loop (two runs of one agent may start together)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    async def call(self, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """Calls MCP tool `name`; failures of the server or the protocol raise `ToolError`."""
        session = self._session
        if session is None:
            raise ToolError(f"MCP server {self.label} is not running: it was closed")
        return await session.call(name, dict(arguments))

    async def aclose(self) -> None:
        """Stops the server (its whole process group, for stdio); safe to call more than once."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> MCPServer:
        await self.tools()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _make_tools(self, listing: Sequence[mcp.types.Tool]) -> tuple[MCPTool, ...]:
        missing = sorted((self.include or set()) - {t.name for t in listing})
        if missing:
            available = ", ".join(sorted(t.name for t in listing)) or "(none)"
            raise ConfigError(
                f"MCP server {self.label} has no tool named {', '.join(map(repr, missing))} "
                f"(in include=); its tools are: {available}"
            )
        offered = [
            t
            for t in listing
            if (self.include is None or t.name in self.include) and t.name not in self.exclude
        ]
        names = tool_names([t.name for t in offered], self.prefix)
        return tuple(
            MCPTool(
                self,
                ToolSpec(
                    names[t.name],
                    t.description or t.title or f"{t.name} (an MCP tool of {self.label})",
                    input_schema(t.input_schema),
                ),
                t.name,
            )
            for t in offered
        )

    def __repr__(self) -> str:
        state = "running" if self._session is not None else "stopped"
        return f"<MCPServer {self.label!r} {state}>"


def servers_from_cli(mcp: Sequence[str], mcp_url: Sequence[str]) -> list[MCPServer]:
    """Servers for `--mcp 'CMD ARGS'` (split like a shell would) and `--mcp-url URL` options."""
    servers: list[MCPServer] = []
    for line in mcp:
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise ConfigError(f"--mcp {line!r}: cannot split the command line: {exc}") from None
        if not words:
            raise ConfigError("--mcp needs a command, e.g. --mcp 'npx -y @scope/server'")
        servers.append(MCPServer.stdio(words[0], *words[1:]))
    servers.extend(MCPServer.http(url) for url in mcp_url)
    return servers
