"""Elicitation: an MCP server asks the person for input while one of its tools runs.

`MCPServer.stdio/http(..., on_elicit=fn)` answers each request with `fn(Elicitation)`: an
`Accept(content)`, a `Decline()` or a `Cancel()`. The client always declares the capability (form
and url), so servers offer their elicitation tools; without a handler every request is declined,
so a server never waits for an answer nobody gives. A handler that raises, or returns something
else, is logged and the request answered "cancel": the run goes on either way.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from mcp.types import ElicitRequestParams, ElicitResult

__all__ = ["Accept", "Answer", "Cancel", "Decline", "ElicitHandler", "Elicitation", "answer"]

logger = logging.getLogger("steadyloop.mcp")


@dataclass(frozen=True, slots=True)
class Elicitation:
    """One request of a server for input: `server` its label (command line or URL), `message`
    the server's text, `schema` the JSON schema of the form (`{}` in url mode), `mode` "form"
    or "url", `url` the page to open (url mode; None in form mode)."""

    server: str
    message: str
    schema: Mapping[str, Any]
    mode: Literal["form", "url"]
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Accept:
    """The person answered: `content` is sent as given (the server validates it); ignored in
    url mode, where accepting means the page was opened."""

    content: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decline:
    """The person said no."""


@dataclass(frozen=True, slots=True)
class Cancel:
    """The person dismissed the request without choosing."""


Answer: TypeAlias = Accept | Decline | Cancel
ElicitHandler: TypeAlias = Callable[[Elicitation], "Answer | Awaitable[Answer]"]


def request_from(label: str, params: ElicitRequestParams) -> Elicitation:
    """The request as a handler sees it."""
    from mcp.types import ElicitRequestURLParams

    if isinstance(params, ElicitRequestURLParams):
        return Elicitation(label, params.message, {}, "url", params.url)
    return Elicitation(label, params.message, dict(params.requested_schema), "form")


async def answer(handler: ElicitHandler | None, request: Elicitation) -> ElicitResult:
    """What the server gets: the handler's answer (a sync handler runs in a worker thread);
    "decline" without a handler; "cancel" when the handler fails."""
    from mcp.types import ElicitResult

    if handler is None:
        return ElicitResult(action="decline")
    try:
        if inspect.iscoroutinefunction(handler):
            reply: Any = await handler(request)
        else:
            reply = await asyncio.to_thread(handler, request)
            if inspect.isawaitable(reply):
                reply = await reply
    except Exception:
        logger.exception(
            "on_elicit of MCP server %s raised: the request is cancelled", request.server
        )
        return ElicitResult(action="cancel")
    if isinstance(reply, Accept):
        content = dict(reply.content) if request.mode == "form" else None
        return ElicitResult(action="accept", content=content)
    if isinstance(reply, Decline):
        return ElicitResult(action="decline")
    if isinstance(reply, Cancel):
        return ElicitResult(action="cancel")
    logger.error(
        "on_elicit of MCP server %s returned %r, not Accept(...), Decline() or Cancel(): the "
        "request is cancelled",
        request.server,
        reply,
    )
    return ElicitResult(action="cancel")
