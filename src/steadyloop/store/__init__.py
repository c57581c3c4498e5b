"""The run log: every run and everything that happened in it, as it happens.

`open_store(url)` opens one: a path or `sqlite:///path` is the SQLite file store (`SQLiteStore`),
`postgresql://...` a Postgres database (`PostgresStore`, extra `steadyloop[postgres]`). Both
implement `RunLog`. `store.rows` writes down what a log holds (the row format); `store.recording`
turns a run's events into rows, `store.reading` reads them back as a transcript, and
`store.export` moves a run in and out as JSON lines.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from steadyloop.errors import ConfigError
from steadyloop.store.export import read_export
from steadyloop.store.ids import find_run
from steadyloop.store.protocol import RunLog
from steadyloop.store.rows import LoggedEvent, RunInfo, RunLinks, ToolRecord

if TYPE_CHECKING:
    from steadyloop.store.postgres import PostgresStore
    from steadyloop.store.sqlite import SCHEMA_VERSION, RunStore, SQLiteStore

__all__ = [
    "SCHEMA_VERSION",
    "LoggedEvent",
    "PostgresStore",
    "RunInfo",
    "RunLinks",
    "RunLog",
    "RunStore",
    "SQLiteStore",
    "ToolRecord",
    "find_run",
    "open_store",
    "read_export",
]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(url: str | os.PathLike[str], *, read_only: bool = False) -> RunLog:
    """The run log at `url`: a path or `sqlite:///path` (SQLite), or `postgresql://...`."""
    text = os.fspath(url)
    if text.startswith(_POSTGRES_SCHEMES):
        from steadyloop.store.postgres import PostgresStore

        return PostgresStore(text, read_only=read_only)
    if text.startswith("sqlite:"):
        # As SQLAlchemy reads them: sqlite:///runs.db is relative, sqlite:////tmp/runs.db not.
        if not text.startswith("sqlite:///") or text == "sqlite:///":
            raise ConfigError(f"a SQLite URL is sqlite:///PATH, got {url}")
        text = text.removeprefix("sqlite:///")
    elif "://" in text:
        raise ConfigError(
            f"unknown run log URL {url}: use a path, sqlite:///path or postgresql://..."
        )
    from steadyloop.store.sqlite import SQLiteStore

    return SQLiteStore(text, read_only=read_only)


def __getattr__(name: str) -> object:
    """The stores are imported on first use: `PostgresStore` needs the `postgres` extra, and a
    command that reads no log (`steadyloop run --no-log`) does not load sqlite3 and the writer."""
    if name == "PostgresStore":
        from steadyloop.store.postgres import PostgresStore

        return PostgresStore
    if name in ("SCHEMA_VERSION", "RunStore", "SQLiteStore"):
        from steadyloop.store import sqlite

        return getattr(sqlite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
