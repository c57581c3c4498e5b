"""A Postgres run log's URL as the user sees it: no password in any message, page or output, in
whichever form the URL carries it; a server that cannot be reached is one line at once."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from steadyloop import ConfigError
from steadyloop.store import open_store
from support.postgres import new_database

pytest.importorskip("psycopg")

SECRET = "Pa55-s3cr3t"
# The embedded server trusts local connections: a password in the URL is carried, not checked.
WITH_PASSWORD: dict[str, Callable[[str], str]] = {
    "user:password@": lambda url: url.replace("postgres:@", f"postgres:{SECRET}@"),
    "password=": lambda url: f"{url}&password={SECRET}",
    "sslpassword=": lambda url: f"{url}&sslpassword={SECRET}",
    "percent-encoded name": lambda url: f"{url}&pass%77ord={SECRET}",
}


@pytest.fixture(params=sorted(WITH_PASSWORD))
def url(request: pytest.FixtureRequest, postgres_server: Any) -> str:
    return WITH_PASSWORD[request.param](new_database(postgres_server))


def steadyloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "steadyloop", *args], capture_output=True, text=True, timeout=60
    )


def test_the_location_and_a_missing_run_show_no_password(url: str) -> None:
    log = open_store(url, read_only=True)
    try:
        assert SECRET not in log.location
        assert "***" in log.location
        with pytest.raises(ConfigError, match="no run 'nope'") as missing:
            log.run("nope")
        assert SECRET not in str(missing.value)
    finally:
        log.close()


def test_show_prints_no_password(url: str) -> None:
    shown = steadyloop("show", "nope", "--store", url)
    assert shown.returncode != 0
    assert "no run 'nope'" in shown.stderr
    assert SECRET not in shown.stdout + shown.stderr


def test_the_viewers_not_found_answer_shows_no_password(url: str) -> None:
    from steadyloop.ui.app import make_app

    log = open_store(url, read_only=True)
    try:
        status, body = asyncio.run(get(make_app(log), "/api/runs/nope"))
    finally:
        log.close()
    assert status == 404
    assert "no run" in json.dumps(json.loads(body))
    assert SECRET.encode() not in body


async def get(app: Any, path: str) -> tuple[int, bytes]:
    """A GET request to an ASGI application, answered in this process."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8765),
    }  # fmt: skip
    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port that refuses connections (bound, not listening) for the test."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.mark.parametrize("command", [["logs"], ["logs", "--batch", "nightly"], ["show", "r1"]])
def test_a_refused_connection_is_one_line_naming_the_server(
    closed_port: int, command: list[str]
) -> None:
    url = f"postgresql://u:{SECRET}@127.0.0.1:{closed_port}/db?password={SECRET}"
    failed = steadyloop(*command, "--store", url)
    assert failed.returncode != 0
    (line,) = failed.stderr.splitlines()
    assert f'"127.0.0.1", port {closed_port}' in line
    assert "Connection refused" in line
    assert SECRET not in line
