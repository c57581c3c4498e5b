"""Serving the run viewer: open the log read-only, bind the address, say where the page is, and
answer requests until Ctrl-C."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import webbrowser
from collections.abc import Callable, Iterator
from pathlib import Path

from steadyloop.errors import ConfigError
from steadyloop.ui.data import open_log

__all__ = ["serve"]

EXTRA_MODULES = ("starlette", "uvicorn")


def serve(
    log: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    open_browser: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """Serves the viewer of the run log at `log` on `host`:`port` (0 picks a free port) until
    interrupted; `say` is told the page's address once requests are answered."""
    try:
        import uvicorn

        from steadyloop.ui.app import make_app
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in EXTRA_MODULES:
            raise
        raise ConfigError(
            "the run viewer needs Starlette and uvicorn: pip install 'steadyloop[ui]'"
        ) from None
    store = open_log(log)
    # Ctrl-C is how the viewer is meant to end, whenever it comes.
    with (
        contextlib.suppress(KeyboardInterrupt),
        contextlib.closing(store),
        _listen(host, port) as listener,
    ):
        loopback = _is_loopback(host)
        url = f"http://{f'[{host}]' if ':' in host else host}:{listener.getsockname()[1]}/"

        def started() -> None:
            say(f"run viewer (read-only) of {store.location} at {url} · Ctrl-C stops it")
            if not loopback:
                say(f"note: {host} is not a loopback address; whoever reaches it can read the log")
            if open_browser:
                webbrowser.open(url)

        hosts = {"localhost", "127.0.0.1", "::1", host.lower()} if loopback else None
        app = make_app(store, hosts, on_start=started)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
        uvicorn.Server(config).run(sockets=[listener])


@contextlib.contextmanager
def _listen(host: str, port: int) -> Iterator[socket.socket]:
    """A socket listening on `host`:`port`; a `ConfigError` that says what to change when the
    address cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host} port {port}: {exc.strerror or exc}; pass another "
                "--port (0 picks a free one) or --host"
            ) from None
        listener.listen()
        yield listener


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost
        return False
