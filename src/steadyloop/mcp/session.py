"""One live MCP connection, owned by a background task; and the two transports.

The SDK's transports and `ClientSession` are context managers holding anyio cancel scopes,
which must be entered and left by the same task. `Session.start` therefore runs them in one
background task that lives as long as the connection: it connects, initializes, lists the
tools, reports ready, then waits to be stopped. Calls go through the session from any task of
the same event loop. Stopping sets an event; the task leaves the context managers, and the
SDK's shielded shutdown closes the server's stdin, then terminates its process group.

What the server sends of its own accord reaches the `Listeners` the session was started with:
its tool list changed, it asks the person for input (elicitation).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TextIO, TypeVar

from steadyloop.errors import ConfigError, ToolError
from steadyloop.secrets import shown_location

if TYPE_CHECKING:
    import httpx2
    from mcp import ClientSession
    from mcp.shared.dispatcher import ProgressFnT
    from mcp.types import (
        CallToolResult,
        ElicitRequestParams,
        ElicitResult,
        GetPromptResult,
        PaginatedResult,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        ServerCapabilities,
        Tool,
    )
    from mcp.types import Prompt as MCPPrompt

__all__ = ["Http", "Listeners", "Session", "Stdio", "Transport"]

T = TypeVar("T")
P = TypeVar("P", bound="PaginatedResult")

logger = logging.getLogger("steadyloop.mcp")

_STDERR_TAIL = 2_000
_LABEL = 80
_CONNECTION_CLOSED = -32000
# The SDK's own defaults for its HTTP transports: 30 s, and 5 minutes between reads of the
# event stream a server may hold open.
_HTTP_TIMEOUT = 30.0
_HTTP_READ_TIMEOUT = 300.0
_REFUSED = {401: "Unauthorized", 403: "Forbidden"}


@dataclass(slots=True)
class Refusal:
    """The status of the last HTTP response a connection got, to tell a refused credential
    (401, 403) from other failures: the SDK reports both as one JSON-RPC error."""

    status: int | None = None

    def text(self) -> str | None:
        """ "HTTP 401 Unauthorized" when the last response refused us, else None."""
        if self.status not in _REFUSED:
            return None
        return f"HTTP {self.status} {_REFUSED[self.status]}"


@dataclass(frozen=True, slots=True)
class Listeners:
    """What the server's own messages reach: `tools_changed()` when it says its tool list
    changed, `elicit(params)` when it asks the person for input; and `listed()`, called as
    the start's tool listing arrives (before any notification that came after it is handled:
    handlers run in the order the messages arrived), so a change said before it is known to
    be in the listing."""

    tools_changed: Callable[[], None]
    elicit: Callable[[ElicitRequestParams], Awaitable[ElicitResult]]
    listed: Callable[[], None]


class Transport(Protocol):
    """How to reach a server: `connect` yields the SDK's (read, write) streams."""

    def label(self) -> str: ...

    def connect(
        self, errlog: TextIO, refusal: Refusal
    ) -> contextlib.AbstractAsyncContextManager[Any]: ...


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
    async def connect(self, errlog: TextIO, refusal: Refusal) -> AsyncIterator[tuple[Any, Any]]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=self.command, args=list(self.args), env=self.env, cwd=self.cwd
        )
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams[0], streams[1]


@dataclass(frozen=True, slots=True)
class Http:
    """A server reached over streamable HTTP; `auth` signs every request (an OAuth flow may
    answer a 401 itself)."""

    url: str
    headers: dict[str, str] | None
    auth: httpx2.Auth | None = field(default=None, compare=False)

    def label(self) -> str:
        return _shorten(shown_location(self.url))

    @contextlib.asynccontextmanager
    async def connect(self, errlog: TextIO, refusal: Refusal) -> AsyncIterator[tuple[Any, Any]]:
        """Connects with an HTTP client of our own, which is how the SDK takes headers and
        auth; `refusal` keeps the status of the last response."""
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async def seen(response: httpx2.Response) -> None:
            refusal.status = response.status_code

        timeout = httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT)
        async with (
            httpx2.AsyncClient(
                headers=self.headers,
                timeout=timeout,
                auth=self.auth,
                event_hooks={"response": [seen]},
            ) as client,
            streamable_http_client(self.url, http_client=client) as streams,
        ):
            yield streams[0], streams[1]


class Session:
    """A running connection: its owner task, the SDK session, what the server can do and its
    tool listing at start."""

    def __init__(
        self,
        transport: Transport,
        task: asyncio.Task[None],
        stop: asyncio.Event,
        errlog: TextIO,
        refusal: Refusal,
        started: tuple[ClientSession, ServerCapabilities | None, list[Tool]],
    ) -> None:
        self.transport = transport
        self.client, self.capabilities, self.listing = started
        self._task = task
        self._loop = task.get_loop()
        self._stop = stop
        self._errlog = errlog
        self._refusal = refusal
        self._lost: str | None = None

    @classmethod
    async def start(cls, transport: Transport, seconds: float, listeners: Listeners) -> Session:
        """Connects, initializes and lists the tools within `seconds`, or `ConfigError`."""
        # Append mode: the server's writes land at the end even after we seek to read.
        errlog: TextIO = tempfile.TemporaryFile(  # noqa: SIM115 - lives as long as the session
            "a+", encoding="utf-8", errors="replace"
        )
        refusal = Refusal()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[_Started] = loop.create_future()
        stop = asyncio.Event()
        serve = _serve(transport, errlog, refusal, listeners, ready, stop)
        task = loop.create_task(serve, name="steadyloop-mcp")
        try:
            await asyncio.wait((ready, task), timeout=seconds, return_when="FIRST_COMPLETED")
        except BaseException:
            await _end(task, stop, started=ready.done())
            errlog.close()
            raise
        if ready.done() and not task.done():
            return cls(transport, task, stop, errlog, refusal, ready.result())
        reason = _start_failure(transport, task, seconds, refusal)
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

    async def call(
        self, name: str, arguments: dict[str, Any], progress: ProgressFnT | None = None
    ) -> CallToolResult:
        """One `tools/call` (`progress` hears the server's progress notifications for it); a
        lost connection or a JSON-RPC error raises `ToolError`."""
        return await self._ask(
            f"{name} ran",
            lambda: self.client.call_tool(name, arguments, progress_callback=progress),
        )

    async def list_tools(self) -> list[Tool]:
        """Every page of the server's tool list."""
        return await self._ask("its tools were listed", lambda: _all_tools(self.client))

    async def list_resources(self) -> list[Resource]:
        """Every page of the server's resources."""
        return await self._ask(
            "its resources were listed",
            lambda: _every_page(self.client.list_resources, lambda page: page.resources),
        )

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """Every page of the server's resource templates."""
        return await self._ask(
            "its resource templates were listed",
            lambda: _every_page(
                self.client.list_resource_templates, lambda page: page.resource_templates
            ),
        )

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """One `resources/read`."""
        return await self._ask(f"{uri} was read", lambda: self.client.read_resource(uri))

    async def list_prompts(self) -> list[MCPPrompt]:
        """Every page of the server's prompts."""
        from mcp.types import PaginatedRequestParams

        async def pages() -> list[MCPPrompt]:
            page = await self.client.list_prompts()
            found = list(page.prompts)
            while page.next_cursor:
                page = await self.client.list_prompts(
                    params=PaginatedRequestParams(cursor=page.next_cursor)
                )
                found.extend(page.prompts)
            return found

        return await self._ask("its prompts were listed", pages)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        """One `prompts/get`."""
        return await self._ask(
            f"prompt {name} was read", lambda: self.client.get_prompt(name, arguments)
        )

    async def _ask(self, doing: str, request: Callable[[], Awaitable[T]]) -> T:
        """Makes one request; a JSON-RPC error raises `ToolError` with the server's message
        (naming the HTTP status when the server refused our credentials), a lost connection
        `ToolError` saying so (and every later request too)."""
        from mcp import MCPError

        if self._lost is not None:
            raise ToolError(self._lost)
        try:
            return await request()
        except MCPError as exc:
            if exc.code != _CONNECTION_CLOSED:
                refused = self._refusal.text()
                if refused is not None:
                    raise ToolError(
                        f"MCP server {self.transport.label()} answered {refused}: its "
                        "credentials are missing or were rejected"
                    ) from None
                raise ToolError(f"MCP error {exc.code}: {exc.message}") from None
            self._lost = self._lost_message(doing)
            raise ToolError(self._lost) from None

    def _lost_message(self, doing: str) -> str:
        tail = stderr_tail(self._errlog)
        said = f"; its stderr ended with:\n{tail}" if tail else ""
        return (
            f"MCP server {self.transport.label()} stopped (connection closed) while {doing}; "
            f"its other tools cannot be called in this run either{said}"
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


_Started = tuple["ClientSession", "ServerCapabilities | None", "list[Tool]"]


async def _serve(
    transport: Transport,
    errlog: TextIO,
    refusal: Refusal,
    listeners: Listeners,
    ready: asyncio.Future[_Started],
    stop: asyncio.Event,
) -> None:
    from mcp import ClientSession
    from mcp.types import ToolListChangedNotification

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            listeners.tools_changed()

    async def on_elicit(context: object, params: ElicitRequestParams) -> ElicitResult:
        return await listeners.elicit(params)

    async with (
        transport.connect(errlog, refusal) as (read, write),
        ClientSession(
            read, write, elicitation_callback=on_elicit, message_handler=on_message
        ) as client,
    ):
        await client.initialize()
        listing = await _all_tools(client)
        listeners.listed()
        if not ready.done():
            ready.set_result((client, client.server_capabilities, listing))
        await stop.wait()


async def _all_tools(client: ClientSession) -> list[Tool]:
    return await _every_page(client.list_tools, lambda page: page.tools)


async def _every_page(
    list_page: Callable[..., Awaitable[P]], items: Callable[[P], Sequence[T]]
) -> list[T]:
    """The items of every page of an MCP list: `list_page` is a `ClientSession.list_...`
    method, `items` a page's items."""
    from mcp.types import PaginatedRequestParams

    page = await list_page()
    found = list(items(page))
    while page.next_cursor:
        page = await list_page(params=PaginatedRequestParams(cursor=page.next_cursor))
        found.extend(items(page))
    return found


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


def _start_failure(
    transport: Transport, task: asyncio.Task[None], timeout: float, refusal: Refusal
) -> str:
    refused = refusal.text()
    if refused is not None:
        return (
            f"it answered {refused}: its credentials are missing or were rejected; pass "
            "headers={'Authorization': ...} or auth=..."
        )
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
            f"cannot use {transport.label()}: {type(exc).__name__}: {exc}; check the URL and that "
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
