"""The Postgres run log: one database for many processes and hosts (extra `steadyloop[postgres]`).

The same tables and rules as the SQLite store (see `steadyloop.store.base`). Reads go through a
psycopg 3 connection pool that checks a connection before handing it out, so a dropped
connection is replaced, not reported. Writes and claims share one session of the store's own
(`steadyloop.store.postgres_session`): the background writer sends each commit's rows as one
multi-row INSERT, and reconnects when the session drops (the rows of a failed transaction are
written again: appends are idempotent). A run is live while its process holds a session-level
advisory lock on that session; Postgres drops the lock when the session ends, however the
process ends, and a session the database ended under a live run is replaced at once and claims
its runs again.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

from steadyloop.errors import ConfigError, RunLogError
from steadyloop.secrets import shown_location
from steadyloop.store.base import SqlStore, schema
from steadyloop.store.writer import LogWriter

try:
    import psycopg
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # this module is imported only when a Postgres log is opened
    raise ConfigError(
        "a Postgres run log needs psycopg: pip install 'steadyloop[postgres]'"
    ) from exc

from steadyloop.store.postgres_session import (
    INSERT_RUN,
    Session,
    claim_key,
    connect_options,
    insert_events,
)

__all__ = ["PostgresStore", "claim_key"]

# Schema version N is reached by running MIGRATIONS[N - 1] on version N - 1 (see
# `steadyloop.store.base.schema`, which both stores share).
MIGRATIONS = schema(real="DOUBLE PRECISION")
SCHEMA_VERSION = len(MIGRATIONS)
# Advisory-lock key that serialises schema migrations of one database.
_MIGRATION_LOCK = 0x5354_4541_4459  # "STEADY"


class PostgresStore(SqlStore):
    """An append-only run log in a Postgres database (its tables are made on first use)."""

    blocking_io = True

    def __init__(self, url: str, *, read_only: bool = False, pool_size: int = 4) -> None:
        self.url = url
        self.location = shown_location(url)
        self.read_only = read_only
        lock = threading.Lock()
        session = Session(url, self.location, lock)
        pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        try:
            options = connect_options(url)
            # First one connection of our own: a server that refuses or is not there is one
            # clear error at once, not a pool trying again for seconds.
            session.connect()
            if read_only:
                session.disconnect()
            pool = ConnectionPool(
                url,
                min_size=1,
                max_size=pool_size,
                open=False,
                check=ConnectionPool.check_connection,
                kwargs={"autocommit": True, "prepare_threshold": None, **options},
            )
            pool.open(wait=True, timeout=10)
            self._pool = pool
            if read_only:
                self._check_version()
            else:
                self._migrate()
        except BaseException as exc:
            session.close()
            if pool is not None:
                pool.close()
            if isinstance(exc, psycopg.Error):  # its text may quote the URL: not chained
                message = f"cannot open the run log {self.location}: {self._said(exc)}"
                raise ConfigError(message) from None
            raise
        self._session = session
        self._writer = LogWriter(session, lock)
        self._closer = weakref.finalize(self, _close, self._writer, session, pool)

    def _said(self, exc: BaseException) -> str:
        """A driver error's text on one line (libpq puts hints on lines of their own), with
        the URL, should it quote it, as `location` shows it."""
        lines = (line.strip() for line in str(exc).replace(self.url, self.location).splitlines())
        return "; ".join(line for line in lines if line)

    def _migrate(self) -> None:
        """Brings the schema up to date in one transaction, under a lock that keeps two
        processes from migrating one database at once."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            version = self._version(conn)
            if version is None:
                conn.execute("CREATE TABLE steadyloop_schema (version INTEGER NOT NULL)")
                conn.execute("INSERT INTO steadyloop_schema VALUES (0)")
            for number in range((version or 0) + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[number - 1]:
                    conn.execute(statement)
                conn.execute("UPDATE steadyloop_schema SET version = %s", (number,))

    def _check_version(self) -> None:
        """A reader's check: `ConfigError` for a schema older or newer than this version's."""
        with self._pool.connection() as conn:
            version = self._version(conn)
        if version is not None and version < SCHEMA_VERSION:
            raise ConfigError(
                f"the run log {self.location} has an older schema (version {version}); run any "
                "command that writes to it (such as `steadyloop run`) once to upgrade it"
            )

    def _version(self, conn: psycopg.Connection[Any]) -> int | None:
        """The database's schema version (None: no run log was made there yet); `ConfigError`
        when it is newer than this steadyloop's."""
        exists = conn.execute("SELECT to_regclass('steadyloop_schema')").fetchone()
        if exists is None or exists[0] is None:
            return None
        row = conn.execute("SELECT version FROM steadyloop_schema").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"the run log {self.location} has schema version {version}, newer than "
                f"this steadyloop understands ({SCHEMA_VERSION}); upgrade steadyloop"
            )
        return version

    def close(self) -> None:
        """Commits what is queued, drops this store's claims and closes its connections."""
        self._closer()

    def claim(self, run_id: str) -> None:
        """Marks run `run_id` live in this process; `ConfigError` when it is live elsewhere."""
        try:
            claimed = self._session.claim(run_id)
        except psycopg.Error as exc:
            raise RunLogError(
                f"cannot claim run {run_id} in the run log {self.location}: {self._said(exc)}",
                run_id,
            ) from exc
        if not claimed:
            raise ConfigError(
                f"run {run_id} is still running (in this or another process); wait for it to "
                "finish or stop it, then resume it"
            )

    def release(self, run_id: str) -> None:
        """Ends run `run_id`'s claim: it is no longer live here."""
        self._session.release(run_id)
        self._writer.forget(run_id)

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        try:
            with self._pool.connection() as conn:
                rows: list[Any] = conn.execute(sql.replace("?", "%s"), parameters).fetchall()
                return rows
        except psycopg.Error as exc:
            if self.read_only and isinstance(exc, psycopg.errors.UndefinedTable):
                return []  # no run was ever logged there: only a writer makes the tables
            raise RunLogError(
                f"reading the run log {self.location} failed: {self._said(exc)}"
            ) from exc

    def _import(self, run: Sequence[Any], events: Sequence[Sequence[Any]]) -> None:
        self.flush()
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(INSERT_RUN, run)
                insert_events(conn, events)
        except psycopg.errors.UniqueViolation as exc:
            raise ConfigError(f"run {run[0]} is already in {self.location}") from exc
        except psycopg.Error as exc:
            raise RunLogError(
                f"importing into the run log {self.location} failed: {self._said(exc)}"
            ) from exc


def _close(writer: LogWriter, session: Session, pool: ConnectionPool[Any]) -> None:
    writer.close()
    session.close()
    pool.close()
