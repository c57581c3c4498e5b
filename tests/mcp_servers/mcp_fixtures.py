"""Helpers for the MCP tests: where the real servers are, and which processes are alive."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
TINY_SERVER = HERE / "tiny_server.py"
LONG_NAME = "x" * 70  # as in tiny_server.py
NPM_CACHE = (
    Path(os.environ.get("STEADYLOOP_TEST_CACHE", Path.home() / ".cache" / "steadyloop-tests"))
    / "npm"
)
# Pinned: the versions FAILURES.md Part 2b was verified with.
NPM_PACKAGES = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
}
MCP_SERVER_TIME = Path(sys.executable).parent / "mcp-server-time"


def package_main(package: str) -> Path:
    """The entry script of an installed npm package."""
    return NPM_CACHE / "node_modules" / package / "dist" / "index.js"


def tiny(mode: str) -> tuple[str, str, str]:
    """The command line of the tiny stdlib server in `mode` (serve, exit, garbage)."""
    return sys.executable, str(TINY_SERVER), mode


def descendants(pid: int | None = None) -> set[int]:
    """Every live process below `pid` (default: this one), zombies included, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry.name)] = int(fields[1])
    root = os.getpid() if pid is None else pid
    found: set[int] = set()
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent]
        found.update(children)
        frontier.extend(children)
    return found


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line contains `marker` (for servers started elsewhere)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def free_port() -> int:
    """A TCP port nobody listens on right now, on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until_listening(process: subprocess.Popen[bytes], port: int, what: str) -> None:
    """Returns once `process` accepts connections on 127.0.0.1:`port`; fails the test when it
    exits first or does not listen within 30 s."""
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{what} did not listen on 127.0.0.1:{port}")
            time.sleep(0.05)
