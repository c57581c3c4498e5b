"""Tools from Model Context Protocol servers, through the official `mcp` SDK (extra `mcp`).

    server = MCPServer.stdio("npx", "-y", "@modelcontextprotocol/server-everything")
    agent = Agent("openai:gpt-4.1-mini", tools=[server, my_python_tool])

An `MCPServer` is a `Toolset`: the agent starts it before a run's first model call (a server that
cannot start raises `ConfigError` with the end of its stderr) and stops it in `Agent.aclose()`;
`async with server:` works too. Its tools are ordinary steadyloop tools: same timeouts,
truncation, parallel calls and error results as Python tools. A server that says its tool list
changed is listed again before each run's next model call; its resources and prompts are read
with the methods of the same names; its requests for input go to `on_elicit`; its progress
notifications become `ToolProgress` events of the call they are about.

The SDK's session and transport are context managers whose cancel scopes must stay in the task
that entered them, so one background task per server owns them for the session's whole life
while calls are made from any task. Stopping the server ends that task, and the SDK's shielded
shutdown closes stdin, then terminates the server's process group: no orphaned processes, also
when the run fails or is cancelled (Ctrl-C).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import shlex
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from steadyloop.dispatch import current_call
from steadyloop.errors import ConfigError, ToolError
from steadyloop.events import ToolProgress
from steadyloop.mcp.elicitation import ElicitHandler, answer, request_from
from steadyloop.mcp.resources import (
    READ_RESOURCE,
    Prompt,
    Resource,
    ResourceTemplate,
    prompt_messages,
    read_tool_description,
    render_resource,
    resource_contents,
)
from steadyloop.mcp.results import render_result
from steadyloop.mcp.schema import input_schema, tool_names
from steadyloop.mcp.session import Http, Listeners, Session, Stdio, Transport
from steadyloop.messages import ArgumentsError
from steadyloop.tools import BoundCall, Tool, ToolOutput, Toolset, ToolSpec

if TYPE_CHECKING:
    import httpx2
    import mcp
    from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult, ReadResourceResult

    from steadyloop.messages import Message

__all__ = ["MCPServer", "MCPTool", "ReadResourceTool", "servers_from_cli"]

DEFAULT_START_TIMEOUT = 30.0


class ServerOptions(TypedDict, total=False):
    """What `MCPServer.stdio()` and `http()` pass on to the constructor as given (it holds
    their defaults and checks them; the class's docstring says what each does)."""

    start_timeout: float
    prefix: str | None
    include: Collection[str] | None
    exclude: Collection[str]
    on_elicit: ElicitHandler | None
    resources_as_tools: bool


logger = logging.getLogger("steadyloop.mcp")


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


class ReadResourceTool(MCPTool):
    """The model's way to read one of a server's resources by URI (`resources_as_tools=True`);
    `remote_name` is the MCP method it uses."""

    def __init__(self, server: MCPServer, name: str, resources: Sequence[Resource]) -> None:
        parameters = {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
            "required": ["uri"],
        }
        spec = ToolSpec(name, read_tool_description(server.label, resources), parameters)
        super().__init__(server, spec, "resources/read")

    def bind(self, arguments: Mapping[str, Any]) -> BoundCall:
        uri = arguments.get("uri")
        if not isinstance(uri, str) or not uri:
            raise ArgumentsError(f"{self.name}: `uri` must be a non-empty string")
        return BoundCall(self.server.read_raw, {"uri": uri}, True)

    def render(self, value: Any) -> ToolOutput:
        return render_resource(value)


class MCPServer(Toolset):
    """An MCP server whose tools the agent may call; build it with `stdio()` or `http()`.

    Args (of both constructors):
        timeout: seconds each call may take (None: the agent's `tool_timeout`).
        start_timeout: seconds to start the server, initialize and list its tools.
        prefix: put before every tool name (`prefix_name`), to tell two servers' tools apart.
        include: only these tools (MCP names) are offered to the model.
        exclude: these tools (MCP names) are never offered to the model.
        on_elicit: answers the server's requests for input, `fn(Elicitation) -> Accept(...) |
            Decline() | Cancel()`, sync (in a worker thread) or async; None declines them.
        resources_as_tools: also offer the model a `read_resource` tool for the server's
            resources (off by default: resources are the application's to choose).
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
        on_elicit: ElicitHandler | None = None,
        resources_as_tools: bool = False,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"MCP server timeout must be > 0 seconds, got {timeout}")
        if start_timeout <= 0:
            raise ConfigError(f"MCP server start_timeout must be > 0 seconds, got {start_timeout}")
        if importlib.util.find_spec("mcp") is None:
            raise ConfigError("MCP servers need the mcp SDK: pip install 'steadyloop[mcp]'")
        if on_elicit is not None and not callable(on_elicit):
            raise ConfigError(f"on_elicit must be a function, got {type(on_elicit).__name__}")
        self.transport = transport
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.prefix = prefix
        self.include = frozenset(include) if include is not None else None
        self.exclude = frozenset(exclude)
        self.on_elicit = on_elicit
        self.resources_as_tools = resources_as_tools
        self._session: Session | None = None
        self._tools: tuple[MCPTool, ...] = ()
        self._stale = False  # the server said its tools changed since they were listed
        self._locks: tuple[asyncio.AbstractEventLoop, asyncio.Lock, asyncio.Lock] | None = None

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        **options: Unpack[ServerOptions],
    ) -> MCPServer:
        """A server run as a child process speaking MCP on its stdin and stdout.

        `env` is added to a minimal environment (PATH, HOME, USER, ...), not to ours, so
        secrets in our environment do not leak to the server unless passed here.
        """
        transport = Stdio(
            command, tuple(args), dict(env) if env else None, os.fspath(cwd) if cwd else None
        )
        return cls(transport, timeout=timeout, **options)

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        *,
        auth: httpx2.Auth | None = None,
        **options: Unpack[ServerOptions],
    ) -> MCPServer:
        """A server reached over streamable HTTP at `url` (usually ending in `/mcp`).

        `auth` signs every request of the session: the MCP SDK's `OAuthClientProvider`, or any
        `httpx2.Auth` (a bearer-token provider of the application's). A server that answers
        401 or 403 at start is a `ConfigError`.
        """
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"MCP server URL must start with http:// or https://, got {url!r}")
        if auth is not None:
            import httpx2

            if not isinstance(auth, httpx2.Auth):
                raise ConfigError(
                    f"auth= must be an httpx2.Auth (the MCP SDK's OAuthClientProvider is one), "
                    f"got {type(auth).__name__}; for a fixed token pass "
                    "headers={'Authorization': 'Bearer ...'}"
                )
        transport = Http(url, dict(headers) if headers else None, auth)
        return cls(transport, timeout=timeout, **options)

    @property
    def label(self) -> str:
        """The command line or URL (its password masked), for messages."""
        return self.transport.label()

    async def tools(self) -> Sequence[MCPTool]:
        """Starts the server if it is not running in this event loop, and lists its tools;
        lists them again when the server said they changed."""
        start_lock, _ = self._loop_locks()
        async with start_lock:
            session = self._session
            if session is not None and session.usable():
                if self._stale:
                    await self._list_again(session)
                return self._tools
            if session is not None:
                self._session = None
                await session.close()
            listeners = Listeners(self._tools_changed, self._elicit, self._listed)
            session = await Session.start(self.transport, self.start_timeout, listeners)
            try:
                tools = await self._make_tools(session, session.listing, starting=True)
            except BaseException:
                await session.close()
                raise
            self._session, self._tools = session, tools
            return tools

    async def _list_again(self, session: Session) -> None:
        """Lists the tools of a server that said they changed; on failure the old list stays
        (and is asked for again at the next model call)."""
        self._stale = False  # a change said while listing marks it stale again
        try:
            listing = await session.list_tools()
            self._tools = await self._make_tools(session, listing, starting=False)
        except ToolError as exc:
            self._tools_changed()  # still stale: every run asks again at its next model call
            logger.warning("MCP server %s: listing its changed tools failed: %s", self.label, exc)

    def _tools_changed(self) -> None:
        self._stale = True
        self.tools_changed()

    def _listed(self) -> None:
        """The start's listing arrived: changes said before it are in it."""
        self._stale = False

    def _loop_locks(self) -> tuple[asyncio.Lock, asyncio.Lock]:
        """One start at a time, and one question to the person at a time, per event loop (two
        runs of one agent may start together)."""
        loop = asyncio.get_running_loop()
        if self._locks is None or self._locks[0] is not loop:
            self._locks = (loop, asyncio.Lock(), asyncio.Lock())
        return self._locks[1], self._locks[2]

    async def _elicit(self, params: ElicitRequestParams) -> ElicitResult:
        _, asking = self._loop_locks()
        async with asking:
            return await answer(self.on_elicit, request_from(self.label, params))

    async def call(self, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """Calls MCP tool `name`; failures of the server or the protocol raise `ToolError`.

        Made while someone listens to the run's events, the call asks for progress, and each
        notification becomes a `ToolProgress` event (before the call's `ToolCallFinished`).
        """
        session = self._running()
        listening = current_call()
        if listening is None:
            return await session.call(name, dict(arguments))
        call, notify = listening
        running = True

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if running:  # a notification late for its call is dropped
                notify(ToolProgress(call, progress, total, message))

        try:
            return await session.call(name, dict(arguments), progress)
        finally:
            running = False

    async def list_resources(self) -> list[Resource]:
        """The server's resources (every page); starts the server if needed."""
        return [Resource.from_mcp(r) for r in await (await self._started()).list_resources()]

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """The server's resource templates (every page); starts the server if needed."""
        templates = await (await self._started()).list_resource_templates()
        return [ResourceTemplate.from_mcp(t) for t in templates]

    async def read_resource(self, uri: str) -> str | bytes | list[str | bytes]:
        """A resource's text (`str`) or blob (`bytes`); a list when it has several parts. An
        unknown URI raises `ToolError` with the server's message."""
        return resource_contents(await self.read_raw(uri))

    async def read_raw(self, uri: str) -> ReadResourceResult:
        """The SDK's answer to `resources/read` (what the `read_resource` tool renders)."""
        return await (await self._started()).read_resource(uri)

    async def list_prompts(self) -> list[Prompt]:
        """The server's prompts (every page); starts the server if needed."""
        return [Prompt.from_mcp(p) for p in await (await self._started()).list_prompts()]

    async def get_prompt(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> tuple[Message, ...]:
        """Prompt `name` filled in with `arguments` (each sent as text), as messages usable as
        `history=`. An unknown prompt or a missing argument raises `ToolError` with the
        server's message."""
        values = {key: str(value) for key, value in (arguments or {}).items()}
        result = await (await self._started()).get_prompt(name, values or None)
        return prompt_messages(result)

    async def _started(self) -> Session:
        await self.tools()
        return self._running()

    def _running(self) -> Session:
        session = self._session
        if session is None:
            raise ToolError(f"MCP server {self.label} is not running: it was closed")
        return session

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

    async def _make_tools(
        self, session: Session, listing: Sequence[mcp.types.Tool], *, starting: bool
    ) -> tuple[MCPTool, ...]:
        """The tools offered from `listing`; at start an `include=` name the server lacks is
        a `ConfigError` (later it is simply not offered)."""
        missing = sorted((self.include or set()) - {t.name for t in listing})
        if missing and starting:
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
        tools: list[MCPTool] = [
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
        ]
        if self.resources_as_tools:
            reader = await self._read_tool(session, tools, starting=starting)
            if reader is not None:
                tools.append(reader)
        return tuple(tools)

    async def _read_tool(
        self, session: Session, tools: Sequence[MCPTool], *, starting: bool
    ) -> ReadResourceTool | None:
        """The `read_resource` tool, naming the resources listed now. At start a server
        without resources, or with a tool of that name, is a `ConfigError`; later such a
        tool of the server's is kept and ours left out."""
        name = f"{self.prefix}_{READ_RESOURCE}" if self.prefix else READ_RESOURCE
        capabilities = session.capabilities
        if starting and (capabilities is None or capabilities.resources is None):
            raise ConfigError(
                f"MCP server {self.label} offers no resources (it lacks the resources "
                "capability): drop resources_as_tools=True"
            )
        if any(tool.name == name for tool in tools):
            if starting:
                raise ConfigError(
                    f"MCP server {self.label} has a tool named {name!r} already, so "
                    "resources_as_tools=True cannot add its own: pass prefix='...' or drop it"
                )
            logger.warning(
                "MCP server %s now has a tool named %r: it is offered instead "
                "of the read_resource tool",
                self.label,
                name,
            )
            return None
        try:
            listed = await session.list_resources()
        except ToolError as exc:
            if starting:
                raise ConfigError(
                    f"MCP server {self.label}: listing its resources failed: {exc}"
                ) from None
            listed = []
        return ReadResourceTool(self, name, [Resource.from_mcp(r) for r in listed])

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
