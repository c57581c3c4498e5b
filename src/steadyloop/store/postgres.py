"""The Postgres run log: one database for many processes and hosts (extra `steadyloop[postgres]`).

The same tables and rules as the SQLite store (see `steadyloop.store.base`). Reads go through a
psycopg 3 connection pool that checks a connection before handing it out, so a dropped
connection is replaced, not reported; the background writer has a connection of its own, sends
each commit's rows as one multi-row INSERT, and reconnects when its connection drops (the rows
of a failed transaction are written again: appends are idempotent). A run is live while its
process holds a session-level advisory lock on a connection kept for that purpose; Postgres
drops the lock when that session ends, however the process ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import weakref
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from steadyloop.errors import ConfigError, RunLogError
from steadyloop.store.base import SqlLog, tables
from steadyloop.store.records import EventRow, FinishRow, Row, RunRow, StatusRow
from steadyloop.store.writer import LogWriter

try:
    import psycopg
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # this module is imported only when a Postgres log is opened
    raise ConfigError(
        "a Postgres run log needs psycopg: pip install 'steadyloop[postgres]'"
    ) from exc

__all__ = ["PostgresStore"]

SCHEMA_VERSION = 1
# Advisory-lock key that serialises schema migrations of one database.
_MIGRATION_LOCK = 0x5354_4541_4459  # "STEADY"

INSERT_RUN = "INSERT INTO runs VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
FINISH_RUN = "UPDATE runs SET status = %s, stop_reason = %s, usage = %s, updated = %s WHERE id = %s"
SET_STATUS = (
    "UPDATE runs SET status = %s, error = %s, updated = %s, usage = COALESCE(%s, usage) "
    "WHERE id = %s"
)


class PostgresStore(SqlLog):
    """An append-only run log in a Postgres database (its tables are made on first use)."""

    blocking_io = True

    def __init__(self, url: str, *, read_only: bool = False, pool_size: int = 4) -> None:
        self.url = url
        self.location = _without_password(url)
        self.read_only = read_only
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=False,
            check=ConnectionPool.check_connection,
            kwargs={"autocommit": True, "prepare_threshold": None},
        )
        try:
            self._pool.open(wait=True, timeout=10)
            if not read_only:
                self._migrate()
        except psycopg.Error as exc:
            self._pool.close()
            raise ConfigError(f"cannot open the run log {self.location}: {exc}") from exc
        except Exception:
            self._pool.close()
            raise
        backend = _Backend(url)
        self._writer = LogWriter(backend, threading.Lock())
        self._claims = _Claims(url)
        self._closer = weakref.finalize(
            self, _close, self._writer, backend, self._claims, self._pool
        )

    def _migrate(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            exists = conn.execute("SELECT to_regclass('steadyloop_schema')").fetchone()
            version = 0
            if exists is not None and exists[0] is not None:
                row = conn.execute("SELECT version FROM steadyloop_schema").fetchone()
                version = row[0] if row else 0
            if version > SCHEMA_VERSION:
                raise ConfigError(
                    f"the run log {self.location} has schema version {version}, newer than "
                    f"this steadyloop understands ({SCHEMA_VERSION}); upgrade steadyloop"
                )
            if version == 0:
                conn.execute("CREATE TABLE steadyloop_schema (version INTEGER NOT NULL)")
                conn.execute("INSERT INTO steadyloop_schema VALUES (1)")
                for statement in tables(real="DOUBLE PRECISION"):
                    conn.execute(statement)

    def close(self) -> None:
        """Commits what is queued, drops this store's claims and closes its connections."""
        self._closer()

    def claim(self, run_id: str) -> None:
        if not self._claims.take(run_id):
            raise ConfigError(
                f"run {run_id} is still running (in this or another process); wait for it to "
                "finish or stop it, then resume it"
            )

    def release(self, run_id: str) -> None:
        self._claims.drop(run_id)
        self._writer.forget(run_id)

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        try:
            with self._pool.connection() as conn:
                rows: list[Any] = conn.execute(sql.replace("?", "%s"), parameters).fetchall()
                return rows
        except psycopg.Error as exc:
            raise RunLogError(f"reading the run log {self.location} failed: {exc}") from exc

    def _import(self, run: Sequence[Any], events: Sequence[Sequence[Any]]) -> None:
        self.flush()
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(INSERT_RUN, run)
                _insert_events(conn, events)
        except psycopg.errors.UniqueViolation as exc:
            raise ConfigError(f"run {run[0]} is already in {self.location}") from exc
        except psycopg.Error as exc:
            raise RunLogError(f"importing into the run log {self.location} failed: {exc}") from exc


class _Backend:
    """The writer's own connection; replaced when it drops."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection[Any] | None = None

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            with contextlib.suppress(Exception):
                if self._conn is not None:
                    self._conn.close()
            self._conn = psycopg.connect(self._url, prepare_threshold=None)
        return self._conn

    def begin(self, *, wait: bool) -> bool:
        # A commit is a round trip to the server: never on the caller's (event loop's) thread.
        if not wait:
            return False
        self._connection()  # psycopg opens the transaction with the first statement
        return True

    def write(self, rows: Sequence[Row]) -> None:
        conn = self._connection()
        events: list[tuple[Any, ...]] = []
        for row in rows:
            if isinstance(row, EventRow):
                events.append(row.values())
                continue
            _insert_events(conn, events)
            events = []
            if isinstance(row, RunRow):
                conn.execute(INSERT_RUN, row.values())
                events.extend(row.events())
            elif isinstance(row, FinishRow):
                conn.execute(FINISH_RUN, row.values())
            elif isinstance(row, StatusRow):
                conn.execute(SET_STATUS, row.values())
        _insert_events(conn, events)

    def commit(self) -> None:
        self._connection().commit()

    def rollback(self) -> None:
        with contextlib.suppress(Exception):  # a dropped connection is replaced on next use
            if self._conn is not None and not self._conn.broken:
                self._conn.rollback()

    def upkeep(self) -> None:
        """Nothing to do: Postgres keeps itself."""

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class _Claims:
    """Session-level advisory locks, one per live run, on a connection kept for them."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()
        self._guard = threading.Lock()

    def take(self, run_id: str) -> bool:
        with self._guard:
            if run_id in self._held:
                return False
            row = (
                self._connection()
                .execute("SELECT pg_try_advisory_lock(%s)", (_key(run_id),))
                .fetchone()
            )
            if not (row and row[0]):
                return False
            self._held.add(run_id)
            return True

    def drop(self, run_id: str) -> None:
        with self._guard:
            if run_id in self._held:
                self._held.discard(run_id)
                with contextlib.suppress(psycopg.Error):
                    self._connection().execute("SELECT pg_advisory_unlock(%s)", (_key(run_id),))

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            # A new session: the old one's locks went with it.
            self._held.clear()
            self._conn = psycopg.connect(self._url, autocommit=True, prepare_threshold=None)
        return self._conn

    def close(self) -> None:
        with self._guard:
            if self._conn is not None:
                self._conn.close()
            self._held.clear()


def _insert_events(conn: psycopg.Connection[Any], events: Sequence[Sequence[Any]]) -> None:
    """All the event rows in one statement; rows already there are left as they are."""
    if not events:
        return
    placeholders = ", ".join(["(%s, %s, %s, %s, %s)"] * len(events))
    conn.execute(
        f"INSERT INTO events VALUES {placeholders} ON CONFLICT DO NOTHING",
        [value for event in events for value in event],
    )


def _key(run_id: str) -> int:
    """A run id as a signed 64-bit advisory-lock key."""
    digest = hashlib.blake2b(run_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def _close(
    writer: LogWriter, backend: _Backend, claims: _Claims, pool: ConnectionPool[Any]
) -> None:
    writer.close()
    backend.close()
    claims.close()
    pool.close()
