"""Credentials for a remote server: an SDK server behind a bearer-token check. Without the
token, or with a wrong one, the start is a `ConfigError` naming the URL and 401 (the model is
never called); an `httpx2.Auth` signs every request, also one that answers a 401 itself."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Generator, Iterator

import httpx2
import pytest

from mcp_servers.mcp_fixtures import HERE, free_port, wait_until_listening
from steadyloop import Agent
from steadyloop.errors import ConfigError
from steadyloop.mcp import MCPServer
from steadyloop.testing import ScriptedModel

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def guarded_url() -> Iterator[str]:
    """changing_server.py over streamable HTTP, refusing requests without the bearer token."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(HERE / "changing_server.py"), "http", str(port), TOKEN],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_listening(process, port, "the guarded server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


class Bearer(httpx2.Auth):
    """Signs each request with a token, counting them."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.requests = 0

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        self.requests += 1
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


class AfterRefusal(httpx2.Auth):
    """Sends each request without a token first, and again with it when refused (as an OAuth
    flow does on its first request)."""

    def __init__(self) -> None:
        self.refused = 0

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        response = yield request
        if response.status_code == 401:
            self.refused += 1
            request.headers["Authorization"] = f"Bearer {TOKEN}"
            yield request


@pytest.mark.parametrize("headers", [None, {"Authorization": "Bearer wrong"}])
async def test_a_refused_start_is_a_config_error_naming_url_and_status(
    guarded_url: str, headers: dict[str, str] | None
) -> None:
    model = ScriptedModel(["never"])
    server = MCPServer.http(guarded_url, headers, start_timeout=10)
    started = time.monotonic()
    async with Agent(model, tools=[server]) as agent:
        with pytest.raises(ConfigError) as caught:
            await agent.run("hi")
    assert time.monotonic() - started < 10  # refused, not waited out
    assert guarded_url in str(caught.value)
    assert "401" in str(caught.value)
    assert model.requests == []


async def test_a_password_in_the_url_is_masked(guarded_url: str) -> None:
    url = guarded_url.replace("http://", "http://ada:hunter2@")
    server = MCPServer.http(url, start_timeout=10)
    with pytest.raises(ConfigError) as caught:
        await server.tools()
    await server.aclose()
    assert "hunter2" not in str(caught.value)
    assert "ada:***@" in str(caught.value)


async def test_an_auth_flow_signs_every_request(guarded_url: str) -> None:
    auth = Bearer(TOKEN)
    async with MCPServer.http(guarded_url, auth=auth) as server:
        names = {t.name for t in await server.tools()}
        result = await server.call("unlock", {})
    assert "unlock" in names
    assert result.content[0].text == "unlocked"  # type: ignore[union-attr]
    assert auth.requests >= 3  # initialize, the list, the call (and notifications)


async def test_an_auth_flow_may_answer_the_401_itself(guarded_url: str) -> None:
    auth = AfterRefusal()
    async with MCPServer.http(guarded_url, auth=auth) as server:
        assert {t.name for t in await server.tools()} >= {"unlock", "lock"}
    assert auth.refused >= 1


def test_auth_must_be_an_httpx_auth() -> None:
    with pytest.raises(ConfigError, match=r"httpx2\.Auth"):
        MCPServer.http("http://127.0.0.1:1/mcp", auth="Bearer abc")  # type: ignore[arg-type]
