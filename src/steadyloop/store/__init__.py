"""The run log: every run and everything that happened in it, as it happens.

`open_store(url)` opens one: a path or `sqlite:///path` is the SQLite file store (`RunStore`),
`postgresql://...` a Postgres database (`PostgresStore`, extra `steadyloop[postgres]`). Both
implement `RunLog`; `steadyloop.store.records` says what a log holds.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from steadyloop.errors import ConfigError
from steadyloop.store.protocol import RunLog
from steadyloop.store.records import LoggedEvent, RunInfo, ToolRecord, read_export
from steadyloop.store.sqlite import SCHEMA_VERSION, RunStore

if TYPE_CHECKING:
    from steadyloop.store.postgres import PostgresStore

__all__ = [
    "SCHEMA_VERSION",
    "LoggedEvent",
    "PostgresStore",
    "RunInfo",
    "RunLog",
    "RunStore",
    "ToolRecord",
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
    return RunStore(text, read_only=read_only)


def __getattr__(name: str) -> object:
    """`PostgresStore` is imported on first use (it needs the `postgres` extra)."""
    if name == "PostgresStore":
        from steadyloop.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
