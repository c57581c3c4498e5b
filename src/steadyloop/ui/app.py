"""The run viewer's web application: a JSON API over the run log, and the page that uses it.

    GET /                               the run list
    GET /runs/{key}                     a run's page (key: its id, or its first 8 characters)
    GET /api/runs?status=&model=&q=     runs, newest first, and what the filters can offer
    GET /api/runs?session=NAME           a session's runs, in the order they started
    GET /api/runs/{key}                 one run with its timeline and per-turn figures
    GET /api/runs/{key}/events?after=N&missing=M,...
                                        its transcript entries after sequence number N, and
                                        those numbered M (still missing when last asked)
    GET /evals, /evals/{name}           the eval list, and one eval's page
    GET /api/evals                      every eval report the log keeps
    GET /api/evals/{name}               one eval's report
    GET /static/...                     the page's script, style sheet and icon

A run id may hold any character, "/" included: in a path it is one percent-encoded segment
(`/api/runs/tenant%2F42`), read from the request's raw path, so "/" in an id never reaches a
file path and `/api/runs/x%2Fevents` is run "x/events", not the events of run "x".

Every request but GET is refused (405): the viewer cannot change the log. While it listens on
loopback it answers only requests addressed to a loopback name, so a web page elsewhere cannot
read the log through DNS rebinding; and its pages may load nothing but their own assets.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Collection
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from steadyloop.errors import ConfigError, SteadyloopError
from steadyloop.store import RunLog
from steadyloop.ui.data import run_entries, run_list, run_page
from steadyloop.ui.evals import eval_list, eval_page

__all__ = ["make_app"]

STATIC = Path(__file__).resolve().parent / "static"

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def make_app(
    store: RunLog,
    hosts: Collection[str] | None = None,
    on_start: Callable[[], None] = lambda: None,
) -> Starlette:
    """The application over `store`; `hosts`: the only host names it answers (None: any);
    `on_start` is called once the server runs it."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        on_start()
        yield

    def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    def runs(request: Request) -> Response:
        query = request.query_params
        found = run_list(
            store,
            status=query.get("status", ""),
            model=query.get("model", ""),
            text=query.get("q", ""),
            limit=_number(query.get("limit"), 200),
            session=query.get("session", ""),
        )
        return _json(found)

    def run(request: Request) -> Response:
        key, rest = _run_key(request, "/api/runs/")
        if not rest:
            return _json(run_page(store, key))
        if rest == ["events"]:
            query = request.query_params
            after = _number(query.get("after"), -1)
            missing = [_number(n, -1) for n in query.get("missing", "").split(",") if n]
            return _json(run_entries(store, key, after, missing))
        raise HTTPException(404, "no such page: a run id in a path is one segment (%2F for /)")

    routes = [
        Route("/", page),
        Route("/runs/{key:path}", page),
        Route("/api/runs", runs),
        Route("/api/runs/{key:path}", run),
        Route("/evals", page),
        Route("/evals/{name}", page),
        Route("/api/evals", lambda request: _json(eval_list(store))),
        Route("/api/evals/{name}", lambda r: _json(eval_page(store, r.path_params["name"]))),
        Mount("/static", StaticFiles(directory=STATIC)),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            ConfigError: _error(404),  # no such run, or an id prefix several runs share
            SteadyloopError: _error(500),
        },
    )
    app.add_middleware(Guard, hosts=hosts)
    return app


class Guard:
    """Refuses every method but GET and requests for a host not in `hosts`; adds `HEADERS`."""

    def __init__(self, app: ASGIApp, hosts: Collection[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal: Response | None = None
        if scope["method"] != "GET":
            refusal = PlainTextResponse(
                "the run viewer is read-only: it answers GET requests only",
                405,
                headers={"Allow": "GET"},
            )
        elif self.hosts is not None and _host(scope) not in self.hosts:
            refusal = PlainTextResponse(
                "unknown host: open the viewer at the address it printed", 403
            )
        if refusal is not None:
            await refusal(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).update(HEADERS)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _host(scope: Scope) -> str:
    """The host name a request is addressed to, without its port ("[::1]:80" -> "::1")."""
    headers: dict[bytes, bytes] = dict(scope["headers"])
    header = headers.get(b"host", b"").decode("latin-1").lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if ":" in header else header


def _run_key(request: Request, prefix: str) -> tuple[str, list[str]]:
    """The run id in a path under `prefix` and the segments after it, read from the raw path
    (where a "/" in the id is still %2F) and decoded segment by segment."""
    raw = request.scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(request.url.path)
    if not path.startswith(prefix):
        raise HTTPException(404, f"not a run path: {path}")
    key, *rest = path[len(prefix) :].split("/")
    return unquote(key), rest


def _number(text: str | None, default: int) -> int:
    """A whole-number query parameter; anything else is answered with 400."""
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise HTTPException(400, f"not a whole number: {text!r}") from None


def _json(document: Any) -> Response:
    return JSONResponse(document, headers={"Cache-Control": "no-store"})


def _error(status: int) -> Callable[[Request, Exception], Response]:
    def respond(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": str(exc)}, status)

    return respond
