"""Real MCP servers for the tests: installs the pinned npm packages once into a cache directory.

`npm install` runs only when the cached versions differ from the pins, so the first run takes
about 10 s and later runs none. Set STEADYLOOP_TEST_CACHE to move the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from mcp_servers.mcp_fixtures import (
    NPM_CACHE,
    NPM_PACKAGES,
    descendants,
    free_port,
    package_main,
    wait_until_listening,
)
from steadyloop.mcp import MCPServer

EVERYTHING = "@modelcontextprotocol/server-everything"
FILESYSTEM = "@modelcontextprotocol/server-filesystem"


def _installed(package: str) -> str | None:
    manifest = NPM_CACHE / "node_modules" / package / "package.json"
    try:
        version: str = json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None
    return version


@pytest.fixture(scope="session")
def npm_servers() -> None:
    """Makes sure the pinned server-everything and server-filesystem are in the cache."""
    if all(_installed(p) == v for p, v in NPM_PACKAGES.items()):
        return
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("the MCP tests need Node.js and npm on PATH (node >= 18) to run real servers")
    NPM_CACHE.mkdir(parents=True, exist_ok=True)
    specs = [f"{p}@{v}" for p, v in NPM_PACKAGES.items()]
    command = [npm, "install", "--prefix", str(NPM_CACHE), "--no-audit", "--no-fund", *specs]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")


@pytest.fixture
async def everything(npm_servers: None) -> AsyncIterator[MCPServer]:
    """server-everything over stdio, not started yet; stopped after the test."""
    server = MCPServer.stdio("node", str(package_main(EVERYTHING)), "stdio")
    yield server
    await server.aclose()


@pytest.fixture
def no_leftover_processes() -> Iterator[None]:
    """Fails the test if it leaves a child process behind (servers must be stopped)."""
    before = descendants()
    yield
    deadline = time.monotonic() + 5
    while (left := descendants() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes left running: {sorted(left)}"


@pytest.fixture(scope="session")
def everything_http_url(npm_servers: None) -> Iterator[str]:
    """server-everything over streamable HTTP; reached only through 127.0.0.1."""
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", ""),
        "PORT": str(port),
    }
    process = subprocess.Popen(
        ["node", str(package_main(EVERYTHING)), "streamableHttp"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_listening(process, port, "server-everything")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
