"""The Postgres run log's own database session (`Session`): the connection its writer commits
on, and the claims of this process's live runs, held on that connection as session-level
advisory locks; a watcher thread keeps it alive and replaces it when the database ends it."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import select
import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from steadyloop.errors import RunLogError
from steadyloop.store.recording import EventRow, FinishRow, Row, RunRow, StatusRow
from steadyloop.store.rows import RUN_COLUMNS

__all__ = ["INSERT_RUN", "ClaimLost", "Session", "claim_key", "connect_options", "insert_events"]

logger = logging.getLogger("steadyloop.store")

# While runs are live: how often an idle session is pinged (keeps it from being dropped as
# idle by whatever sits in between, and finds a dead one), and how soon a session that could
# not be replaced is tried again.
PING_SECONDS = 5.0
RECONNECT_SECONDS = 0.2
# How long a new session waits for the old one to let go of its claims.
TAKE_BACK_SECONDS = 5.0
# libpq settings used unless the URL sets them: give up on a server that does not answer, and
# notice a connection the network dropped without a word.
_CONNECT_DEFAULTS = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}

# The server process holding a run's claim, by `_lock_tag`.
HOLDER = (
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
    "AND classid = %s::bigint::oid AND objid = %s::bigint::oid "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
INSERT_RUN = f"INSERT INTO runs VALUES ({', '.join(['%s'] * len(RUN_COLUMNS))})"
FINISH_RUN = "UPDATE runs SET status = %s, stop_reason = %s, usage = %s, updated = %s WHERE id = %s"
SET_STATUS = (
    "UPDATE runs SET status = %s, error = %s, updated = %s, usage = COALESCE(%s, usage) "
    "WHERE id = %s"
)


class ClaimLost(RunLogError):
    """A run's claim went with a dropped session, and another process has the run now."""


class Session:
    """The store's own database session: the writer's connection, and the claims of its live
    runs as session-level advisory locks.

    One session does both, so a row of a claimed run is only ever committed by a session that
    holds its claim: when the session ends, the claims and any transaction in flight end with it.
    A new session claims the runs again before it writes anything; a run someone else claimed
    meanwhile is lost here, and its rows are refused (`ClaimLost`, the run stops) instead of
    written. A watcher thread keeps the session going while it holds claims: it reconnects as
    soon as the server ends the session (its socket turns readable while nobody uses it), pings
    it now and then, and the session asks the server not to end it for idling.

    `lock` (the writer's) guards the connection: the writer holds it around `begin` ... `commit`,
    and `claim`, `release` and the watcher take it themselves.
    """

    def __init__(self, url: str, location: str, lock: threading.Lock) -> None:
        self._url = url
        self._location = location
        self._lock = lock
        self._conn: psycopg.Connection[Any] | None = None
        # The server processes of this store's sessions since its claims were last all held by
        # one: a claim still held by one of them is ours to take back.
        self._pids: set[int] = set()
        self._held: set[str] = set()
        self._lost: set[str] = set()
        self._watcher: threading.Thread | None = None
        self._stopping = threading.Event()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)  # a wake-up nobody reads yet is not waited for

    # -- the writer's backend (called with `lock` held) ----------------------------------------

    commits_here = False

    def begin(self, *, wait: bool) -> bool:
        # A commit is a round trip to the server: never on the caller's (event loop's) thread.
        if not wait:
            return False
        self._connection()  # psycopg opens the transaction with the first statement
        return True

    def write(self, rows: Sequence[Row]) -> None:
        conn = self._connection()  # a new session first claims this process's runs again
        for row in rows:
            if row.run_id in self._lost and not isinstance(row, StatusRow):
                raise ClaimLost(
                    f"run {row.run_id} stopped: this process lost its connection to the run log "
                    f"{self._location} and another process has taken it over; it goes on "
                    f"there (`steadyloop show {row.run_id}` tells how far it got)"
                )
        events: list[tuple[Any, ...]] = []
        for row in rows:
            if row.run_id in self._lost:
                continue  # a status a stopped run would set is the new owner's to set
            if isinstance(row, EventRow):
                events.append(row.values())
                continue
            insert_events(conn, events)
            events = []
            if isinstance(row, RunRow):
                conn.execute(INSERT_RUN, row.values())
                events.extend(row.events())
            elif isinstance(row, FinishRow):
                conn.execute(FINISH_RUN, row.values())
            elif isinstance(row, StatusRow):
                conn.execute(SET_STATUS, row.values())
        insert_events(conn, events)

    def commit(self) -> None:
        self._connection().commit()

    def rollback(self) -> None:
        with contextlib.suppress(Exception):  # a dropped connection is replaced on next use
            if self._conn is not None and not self._conn.broken:
                self._conn.rollback()

    def upkeep(self) -> None:
        """Nothing to do: Postgres keeps itself. (Called without `lock`, unlike the rest of
        this section.)"""

    def upkeep_due(self) -> bool:
        return False

    # -- claims --------------------------------------------------------------------------------

    def claim(self, run_id: str) -> bool:
        """Claims run `run_id` for this process; False when a live run holds it (here or in
        another process). A session that dropped unnoticed is replaced, once."""
        with self._lock:
            if run_id in self._held:
                return False
            try:
                taken = _try_lock(self._connection(), run_id)
            except psycopg.OperationalError:
                self._disconnect()
                taken = _try_lock(self._connection(), run_id)
            if taken:
                self._held.add(run_id)
                self._lost.discard(run_id)
        if taken:
            self._watch()
        return taken

    def release(self, run_id: str) -> None:
        """Ends this process's claim on run `run_id` (a no-op when it holds none)."""
        with self._lock:
            self._lost.discard(run_id)
            if run_id not in self._held:
                return
            self._held.discard(run_id)
            conn = self._conn
            if conn is not None and not conn.broken:
                with contextlib.suppress(psycopg.Error):  # a dropped session holds nothing
                    conn.execute("SELECT pg_advisory_unlock(%s)", (claim_key(run_id),))
                    conn.commit()

    # -- the session ---------------------------------------------------------------------------

    def connect(self) -> None:
        """Opens the session now (a store opens it before anything else, to fail fast)."""
        with self._lock:
            self._connection()

    def disconnect(self) -> None:
        """Ends the session for now (the next write or claim opens another)."""
        with self._lock:
            self._disconnect()

    def _connection(self) -> psycopg.Connection[Any]:
        """The session, a new one when it ended; a new one claims this process's runs again."""
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self._disconnect()
        conn = psycopg.connect(self._url, prepare_threshold=None, **connect_options(self._url))
        try:
            with contextlib.suppress(psycopg.errors.UndefinedObject):  # before Postgres 14
                conn.execute("SET idle_session_timeout = 0")  # claims must not idle away
            conn.commit()
            self._pids.add(conn.info.backend_pid)
            for run_id in sorted(self._held):
                if not self._take_back(conn, run_id):
                    self._held.discard(run_id)
                    self._lost.add(run_id)
                    logger.info("run %s was taken over while this process was cut off", run_id)
        except BaseException:
            conn.close()
            raise
        self._conn, self._pids = conn, {conn.info.backend_pid}
        self._wake()  # the watcher watches the new socket
        return conn

    def _take_back(self, conn: psycopg.Connection[Any], run_id: str) -> bool:
        """Claims run `run_id` again on the new session `conn`; False when another process has
        it. The old session may still hold it: on its way out, or cut off from us by the network
        while the server keeps it. Its claims are ours, so it is ended and they are taken back
        (for at most `TAKE_BACK_SECONDS`)."""
        deadline = time.monotonic() + TAKE_BACK_SECONDS
        while not _try_lock(conn, run_id):
            row = conn.execute(HOLDER, _lock_tag(claim_key(run_id))).fetchone()
            conn.commit()
            holder = None if row is None else row[0]  # None: let go meanwhile
            if holder not in self._pids | {None} or time.monotonic() > deadline:
                return False
            if holder is not None:
                try:
                    conn.execute("SELECT pg_terminate_backend(%s)", (holder,))
                    conn.commit()
                except psycopg.errors.InsufficientPrivilege:
                    conn.rollback()  # it ends by itself once the server notices
            time.sleep(0.01)
        return True

    def _disconnect(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None

    def _watch(self) -> None:
        """Starts the watcher once the session holds a claim."""
        with self._lock:
            if self._watcher is not None or self._stopping.is_set():
                return
            self._watcher = threading.Thread(
                target=self._keep_alive, name="steadyloop-pg-claims", daemon=True
            )
            self._watcher.start()

    def _keep_alive(self) -> None:
        """The watcher: while claims are held, replaces an ended session at once (claiming the
        runs again) and pings an idle one every `PING_SECONDS`."""
        while not self._stopping.is_set():
            with self._lock:
                held, fd = bool(self._held), self._socket()
            if not held:
                self._pause(PING_SECONDS)
                continue
            # Down: claims to take again on a new session, soon, before anyone else does.
            timed_out = self._pause(RECONNECT_SECONDS if fd is None else PING_SECONDS, fd)
            with self._lock:
                if self._stopping.is_set() or not self._held:
                    continue
                # Ping when the session is gone (that reconnects), a ping is due, or the server
                # said something unasked while nobody was using the session: most likely that
                # it is ending it. A wake-up by the writer's own traffic needs nothing.
                if fd is None or fd != self._socket() or timed_out or _readable(fd, 0):
                    self._ping()

    def _ping(self) -> None:
        """Checks the session with a round trip; replaces it when it ended (a failure to is
        left for the next round, or the writer, to retry)."""
        try:
            self._round_trip()
        except psycopg.Error as exc:
            logger.debug("the run log's session ended; replacing it", exc_info=exc)
            self._disconnect()
            with contextlib.suppress(psycopg.Error):
                self._connection()

    def _round_trip(self) -> None:
        conn = self._connection()
        conn.execute("SELECT 1")
        conn.rollback()

    def _socket(self) -> int | None:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return None
        try:
            return conn.fileno()
        except psycopg.Error:
            return None

    def _pause(self, seconds: float, fd: int | None = None) -> bool:
        """Waits `seconds`, or less: until the socket `fd` is readable or `_wake` is called;
        True when the time ran out."""
        watched = [self._wake_read] if fd is None else [self._wake_read, fd]
        try:
            ready = select.select(watched, [], [], seconds)[0]
        except (OSError, ValueError):  # the socket was closed meanwhile
            return False
        if self._wake_read in ready:
            os.read(self._wake_read, 4096)
        return not ready

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"!")

    def close(self) -> None:
        """Stops the watcher and ends the session (and with it this process's claims)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._wake()
        if self._watcher is not None:
            self._watcher.join()
        with self._lock:
            self._disconnect()
            self._held.clear()
        os.close(self._wake_read)
        os.close(self._wake_write)


def insert_events(conn: psycopg.Connection[Any], events: Sequence[Sequence[Any]]) -> None:
    """All the event rows in one statement; rows already there are left as they are."""
    if not events:
        return
    placeholders = ", ".join(["(%s, %s, %s, %s, %s)"] * len(events))
    conn.execute(
        f"INSERT INTO events VALUES {placeholders} ON CONFLICT DO NOTHING",
        [value for event in events for value in event],
    )


def claim_key(run_id: str) -> int:
    """The advisory-lock key of run `run_id`'s claim (a signed 64-bit integer): while the run is
    live, `pg_locks` shows its process's session holding it."""
    digest = hashlib.blake2b(run_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _try_lock(conn: psycopg.Connection[Any], run_id: str) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (claim_key(run_id),)).fetchone()
    conn.commit()
    return bool(row and row[0])


def _lock_tag(key: int) -> tuple[int, int]:
    """How `pg_locks` shows a 64-bit advisory-lock key: its high and low 32 bits."""
    return (key >> 32) & 0xFFFF_FFFF, key & 0xFFFF_FFFF


def _readable(fd: int, seconds: float) -> bool:
    with contextlib.suppress(OSError, ValueError):
        return bool(select.select([fd], [], [], seconds)[0])
    return True  # a socket closed meanwhile: look at it


def connect_options(url: str) -> dict[str, Any]:
    """`_CONNECT_DEFAULTS` less what the URL sets itself."""
    given = conninfo_to_dict(url)
    return {name: value for name, value in _CONNECT_DEFAULTS.items() if name not in given}
