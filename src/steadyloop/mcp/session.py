"""One live MCP connection, owned by a background task; and the two transports.

The SDK's transports and `ClientSession` are context managers holding anyio cancel scopes,
which must be entered and left by the same task. `Session.start` therefore runs them in one
background task that lives as long as the connection: it connects, initializes, lists the
tools, reports ready, then waits to be stopped. Calls go through the session from any task of
the same event loop. Stopping sets an event; the task leaves the context managers, and the
SDK's shielded shutdown closes the server's stdin, then terminates its process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from steadyloop.errors import ConfigError, ToolError

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

__all__ = ["Http", "Session", "Stdio", "Transport"]

logger = logging.getLogger("steadyloop.mcp")

_STDERR_TAIL = 2_000
_LABEL = 80
_CONNECTION_CLOSED = -32000
# The SDK's own defaults for its HTTP transports: 30 s, and 5 minutes between reads of the
# event stream a server may hold open.
_HTTP_TIMEOUT = 30.0
_HTTP_READ_TIMEOUT = 300.0


class Transport(Protocol):
    """How to reach a server: `connect` yields the SDK's (read, write) streams."""

    def label(self) -> str: ...

    def connect(self, errlog: TextIO) -> contextlib.AbstractAsyncContextManager[Any]: ...


@dataclass(frozen=True, slots=True)
class Stdio:
    """A server run as a child process; its stderr goes to `errlog`."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str] | None
    cwd: str | None

    def label(self) -> str:
        return _shorten(shlex.join((self.command, *self.args)))

    @contextlib.asynccontextmanager
    async def connect(self, errlog: TextIO) -> AsyncIterator[tuple[Any, Any]]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=self.command, args=list(self.args), env=self.env, cwd=self.cwd
        )
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams[0], streams[1]


@dataclass(frozen=True, slots=True)
class Http:
    """A server reached over streamable HTTP."""

    url: str
    headers: dict[str, str] | None

    def label(self) -> str:
        return _shorten(self.url)

    @contextlib.asynccontextmanager
    async def connect(self, errlog: TextIO) -> AsyncIterator[tuple[Any, Any]]:
        """Connects with an HTTP client of our own, which is how the SDK takes headers."""
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT)
        async with (
            httpx2.AsyncClient(headers=self.headers, timeout=timeout) as client,
            streamable_http_client(self.url, http_client=client) as streams,
        ):
            yield streams[0], streams[1]


class Session:
    """A running connection: its owner task, the SDK session and the server's tool listing."""

    def __init__(
        self,
        transport: Transport,
        task: asyncio.Task[None],
        stop: asyncio.Event,
        errlog: TextIO,
        client: ClientSession,
        listing: list[Tool],
    ) -> None:
        self.transport = transport
        self.listing = listing
        self._task = task
        self._loop = task.get_loop()
        self._stop = stop
        self._errlog = errlog
        self._client = client
        self._lost: str | None = None

    @classmethod
    async def start(cls, transport: Transport, seconds: float) -> Session:
        """Connects, initializes and lists the tools within `seconds`, or `ConfigError`."""
        # Append mode: the server's writes land at the end even after we seek to read.
        errlog: TextIO = tempfile.TemporaryFile(  # noqa: SIM115 - lives as long as the session
            "a+", encoding="utf-8", errors="replace"
        )
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[tuple[ClientSession, list[Tool]]] = loop.create_future()
        stop = asyncio.Event()
        task = loop.create_task(_serve(transport, errlog, ready, stop), name="steadyloop-mcp")
        try:
            await asyncio.wait((ready, task), timeout=seconds, return_when="FIRST_COMPLETED")
        except BaseException:
            await _end(task, stop, started=ready.done())
            errlog.close()
            raise
        if ready.done() and not task.done():
            client, listing = ready.result()
            return cls(transport, task, stop, errlog, client, listing)
        reason = _start_failure(transport, task, seconds)
        await _end(task, stop, started=ready.done())
        tail = stderr_tail(errlog)
        errlog.close()
        said = f"\nIts stderr ended with:\n{tail}" if tail else ""
        raise ConfigError(f"MCP server {transport.label()} failed to start: {reason}{said}")

    def usable(self) -> bool:
        """True while the connection is up and belongs to the running event loop."""
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self._lost is None and not self._task.done() and current is self._loop

    async def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """One `tools/call`; a lost connection or a JSON-RPC error raises `ToolError`."""
        from mcp import MCPError

        if self._lost is not None:
            raise ToolError(self._lost)
        try:
            return await self._client.call_tool(name, arguments)
        except MCPError as exc:
            if exc.code != _CONNECTION_CLOSED:
                raise ToolError(f"MCP error {exc.code}: {exc.message}") from None
            self._lost = self._lost_message(name)
            raise ToolError(self._lost) from None

    def _lost_message(self, name: str) -> str:
        tail = stderr_tail(self._errlog)
        said = f"; its stderr ended with:\n{tail}" if tail else ""
        return (
            f"MCP server {self.transport.label()} stopped (connection closed) while {name} "
            f"ran; its other tools cannot be called in this run either{said}"
        )

    async def close(self) -> None:
        """Stops the owner task, which shuts the server down; idempotent."""
        if self._loop.is_closed():
            # `asyncio.run` that started it has ended and cancelled the task already.
            self._errlog.close()
            return
        if self._loop is asyncio.get_running_loop():
            await _end(self._task, self._stop, started=True)
        self._errlog.close()


async def _serve(
    transport: Transport,
    errlog: TextIO,
    ready: asyncio.Future[tuple[ClientSession, list[Tool]]],
    stop: asyncio.Event,
) -> None:
    from mcp import ClientSession
    from mcp.types import PaginatedRequestParams

    async with transport.connect(errlog) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        page = await client.list_tools()
        listing = list(page.tools)
        while page.next_cursor:
            page = await client.list_tools(params=PaginatedRequestParams(cursor=page.next_cursor))
            listing.extend(page.tools)
        if not ready.done():
            ready.set_result((client, listing))
        await stop.wait()


async def _end(task: asyncio.Task[None], stop: asyncio.Event, *, started: bool) -> None:
    """Makes the owner task leave its context managers and waits until it has.

    A started task is waiting for `stop` and leaves cleanly; one still starting is cancelled.
    """
    stop.set()
    if not started:
        task.cancel()
    try:
        await asyncio.wait((task,))
    except asyncio.CancelledError:
        # We were cancelled ourselves (Ctrl-C): let the bounded shutdown finish, then go on.
        await asyncio.wait((task,))
        raise
    if not task.cancelled() and (exc := task.exception()) is not None:
        logger.debug("MCP session ended with %r", exc)


def _start_failure(transport: Transport, task: asyncio.Task[None], timeout: float) -> str:
    if not task.done():
        return (
            f"no answer to `initialize` within {timeout:g}s; check that it is an MCP server "
            "that speaks JSON-RPC on stdout (and logs only to stderr)"
        )
    if task.cancelled():
        return "start-up was cancelled"
    exc = _leaf(task.exception())
    if isinstance(exc, FileNotFoundError) and isinstance(transport, Stdio):
        return f"command not found: {transport.command!r}; install it or give its full path"
    if isinstance(exc, PermissionError) and isinstance(transport, Stdio):
        return f"cannot execute {transport.command!r}: {exc.strerror}"
    if getattr(exc, "code", None) == _CONNECTION_CLOSED:
        return "it closed the connection before answering `initialize` (did it exit?)"
    if isinstance(transport, Http):
        return (
            f"cannot use {transport.url}: {type(exc).__name__}: {exc}; check the URL and that "
            "the server is running"
        )
    return f"{type(exc).__name__}: {exc}"


def _leaf(exc: BaseException | None) -> BaseException | None:
    """The first real exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def stderr_tail(errlog: TextIO) -> str:
    """The last characters the server wrote to stderr ('' when it wrote nothing)."""
    try:
        errlog.flush()
        size = errlog.seek(0, 2)
        errlog.seek(max(0, size - _STDERR_TAIL * 4))
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    return text[-_STDERR_TAIL:].strip()


def _shorten(text: str) -> str:
    return text if len(text) <= _LABEL else text[: _LABEL - 3] + "..."
