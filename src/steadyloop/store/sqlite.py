"""The SQLite run log: one file, zero set-up, the default.

One row per run (model, prompt, status, totals) and one row per event: each transcript entry,
each model request (its turn and size; the view itself is derived from the entries), each
answered tool call with its arguments, timing, attempts and *untruncated* output, each
compaction, limit and error. Rows are only ever appended (the run row's status and totals are
the one thing updated). WAL mode with `synchronous=NORMAL`: a commit survives the process being
killed without an fsync per commit; checkpoints (with their fsync) run in the background.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
import time
import weakref
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from steadyloop.errors import ConfigError, RunLogError
from steadyloop.store.base import SqlStore, schema
from steadyloop.store.locks import RunLocks
from steadyloop.store.recording import EventRow, FinishRow, Row, RunRow, StatusRow
from steadyloop.store.rows import RUN_COLUMNS
from steadyloop.store.writer import LogWriter

__all__ = ["SCHEMA_VERSION", "RunStore", "SQLiteStore"]

# Seconds a connection waits for another process's write to finish before giving up.
BUSY_SECONDS = 10.0
# When the background thread folds the write-ahead log into the file (a checkpoint, two fsyncs):
# once this many commits or rows went in since the last, whichever comes first. The log grows by
# the pages each commit changes: a few for a commit of a few rows (a run's write-ahead points),
# about one for every five rows of a large one (`durability="batch"`), so either way it stays at a
# few megabytes, as with SQLite's own default (1,000 pages), without folding a log of large
# commits five times as often.
CHECKPOINT_COMMITS = 400
CHECKPOINT_ROWS = 5000
# Seconds closing waits for readers in the middle of a read to let the log be folded.
FOLD_SECONDS = 2.0


# Schema version N is reached by running MIGRATIONS[N - 1] on version N - 1 (see
# `steadyloop.store.base.schema`, which both stores share).
MIGRATIONS = schema(real="REAL")
SCHEMA_VERSION = len(MIGRATIONS)

INSERT_RUN = f"INSERT INTO runs VALUES ({', '.join('?' * len(RUN_COLUMNS))})"
INSERT_EVENT = "INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?)"
# Event rows one INSERT carries at most: SQLite runs a statement in one step, however many rows
# it holds, while `executemany` pays a step (and a hand-over of the GIL) per row. 64 rows of 5
# values stay well under the oldest SQLite's limit of 999 values a statement.
EVENTS_PER_INSERT = 64
FINISH_RUN = "UPDATE runs SET status = ?, stop_reason = ?, usage = ?, updated = ? WHERE id = ?"
SET_STATUS = (
    "UPDATE runs SET status = ?, error = ?, updated = ?, usage = COALESCE(?, usage) WHERE id = ?"
)


class SQLiteStore(SqlStore):
    """An append-only run log in one SQLite file (created, with its folder, on first use).

    `read_only=True` opens an existing log for reading only (it never creates one and never
    writes, not even a checkpoint). `close()` commits what is queued, releases the file and
    folds the write-ahead log back into it; a store still open at interpreter exit is closed then.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        self.read_only = read_only
        self._unmade = False
        self._lock = threading.Lock()
        self._db = self._open_read_only() if read_only else self._open()
        self._backend = _Backend(self._db, self._lock)
        self._writer = LogWriter(self._backend, self._lock)
        self._locks = RunLocks(self.path)
        self._closer = weakref.finalize(
            self, _close, self._writer, self._locks, self._db, fold=not read_only
        )

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_SECONDS
            )
        except (sqlite3.Error, OSError) as exc:
            raise self._cannot_open(exc) from exc
        try:
            # Refuse a log from a newer version before anything (even WAL mode) touches it.
            self._check_version(db)
            _use_wal(db)
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA wal_autocheckpoint=0")  # the writer thread checkpoints
            _migrate(db)
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):
                raise self._cannot_open(exc) from exc
            raise
        return db

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise ConfigError(f"no run log at {self.path} yet: no run has been logged there")
        uri = self.path.resolve().as_uri()
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        try:
            self._check_version(db)
        except sqlite3.OperationalError:
            # A WAL log in a folder we cannot write lacks the shared-memory file a reader needs;
            # nobody can be writing there, so the file is read as it stands.
            db.close()
            db = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
            try:
                self._check_version(db)
            except sqlite3.Error as exc:
                db.close()
                raise self._cannot_open(exc) from exc
        except sqlite3.Error as exc:
            db.close()
            raise self._cannot_open(exc) from exc
        return db

    def _check_version(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        # A log whose creator died before making its tables holds no runs; only a writer can
        # bring an older schema up to date.
        self._unmade = version == 0
        if 0 < version < SCHEMA_VERSION and self.read_only:
            db.close()
            raise ConfigError(
                f"the run log {self.path} has an older schema (version {version}); run any "
                "command that writes to it (such as `steadyloop run`) once to upgrade it"
            )
        if version > SCHEMA_VERSION:
            db.close()
            raise ConfigError(
                f"the run log {self.path} has schema version {version}, newer than this "
                f"steadyloop understands ({SCHEMA_VERSION}); upgrade steadyloop to read it"
            )

    def _cannot_open(self, exc: BaseException) -> ConfigError:
        return ConfigError(
            f"cannot open the run log {self.path}: {exc}; move the file aside or point "
            "STEADYLOOP_HOME elsewhere"
        )

    def close(self) -> None:
        """Commits what is queued, drops this store's run locks and closes the file."""
        self._closer()

    # -- live runs ---------------------------------------------------------------------------

    def claim(self, run_id: str) -> None:
        """Marks run `run_id` live in this process; `ConfigError` when it is live elsewhere."""
        try:
            claimed = self._locks.claim(run_id)
        except OSError as exc:
            raise RunLogError(
                f"cannot lock run {run_id} in {self._locks.path}: {exc}", run_id
            ) from exc
        if not claimed:
            raise ConfigError(
                f"run {run_id} is still running (in this or another process); wait for it to "
                "finish or stop it, then resume it"
            )

    def release(self, run_id: str) -> None:
        """Ends run `run_id`'s claim: it is no longer live here."""
        self._locks.release(run_id)
        self._writer.forget(run_id)

    # -- primitives ----------------------------------------------------------------------------

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        if self.read_only and self._unmade:
            return []
        with self._lock:
            try:
                self._backend.waiting(True)
                # Read to the end: the read ends with it, so no reader (the viewer, say) holds a
                # transaction between reads that would keep a writer from folding the log.
                return self._db.execute(sql, parameters).fetchall()
            except sqlite3.Error as exc:
                raise RunLogError(
                    f"reading the run log {self.path} failed: {exc}; if the file is damaged, "
                    "move it aside (its runs can be exported from a copy)"
                ) from exc

    def _import(self, run: Sequence[Any], events: Sequence[Sequence[Any]]) -> None:
        self.flush()
        with self._lock:
            try:
                self._backend.waiting(True)
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(INSERT_RUN, run)
                self._db.executemany(INSERT_EVENT, events)
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.IntegrityError):
                    raise ConfigError(f"run {run[0]} is already in {self.path}") from exc
                raise RunLogError(f"importing into the run log {self.path} failed: {exc}") from exc


RunStore = SQLiteStore
"""`SQLiteStore` under its earlier name, kept so existing code goes on working."""


class _Backend:
    """The writer's view of the SQLite connection."""

    commits_here = True

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self._db = db
        self._lock = lock
        self._waits = True  # opened with a busy timeout
        self._rows_since_checkpoint = 0
        self._commits_since_checkpoint = 0
        self._changes_seen = db.total_changes

    def begin(self, *, wait: bool) -> bool:
        # Another process holding the write lock must not block the caller's thread.
        self.waiting(wait)
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            if wait:
                raise
            return False
        return True

    def waiting(self, wait: bool) -> None:
        """Whether the connection's statements wait up to `BUSY_SECONDS` for another
        connection's lock (reads and the background thread's writes) or give up at once
        (commits on the caller's thread). Set only when it changes: a commit on the caller's
        thread leaves it off for the next one, and whoever needs it back sets it."""
        if wait != self._waits:
            self._db.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000) if wait else 0}")
            self._waits = wait

    def write(self, rows: Sequence[Row]) -> None:
        """Writes the runs' rows in order and then all the event rows, many to a statement
        (events touch only their own table: where they go among the runs' rows is no matter)."""
        events: list[tuple[Any, ...]] = []
        statements = _Statements(self._db)
        for row in rows:
            if isinstance(row, EventRow):
                events.append(row.values())
            elif isinstance(row, RunRow):
                statements.execute(INSERT_RUN, row.values())
                events.extend(row.events())
            elif isinstance(row, FinishRow):
                statements.execute(FINISH_RUN, row.values())
            elif isinstance(row, StatusRow):
                statements.execute(SET_STATUS, row.values())
        statements.send()
        for start in range(0, len(events), EVENTS_PER_INSERT):
            chunk = events[start : start + EVENTS_PER_INSERT]
            self._db.execute(_insert_events(len(chunk)), list(chain.from_iterable(chunk)))

    def commit(self) -> None:
        self._db.execute("COMMIT")
        changes = self._db.total_changes
        self._rows_since_checkpoint += changes - self._changes_seen
        self._commits_since_checkpoint += 1
        self._changes_seen = changes

    def rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # an unusable connection says so next time
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

    def upkeep_due(self) -> bool:
        """Whether enough commits or rows went in to fold the log (read without the lock)."""
        return (
            self._rows_since_checkpoint >= CHECKPOINT_ROWS
            or self._commits_since_checkpoint >= CHECKPOINT_COMMITS
        )

    def upkeep(self) -> None:
        """Folds the write-ahead log into the file once enough commits or rows went in. With
        the writer's lock held, so no commit lands meanwhile: only then does SQLite start the
        write-ahead log over at the next commit instead of letting it grow."""
        if not self.upkeep_due():
            return
        with self._lock, contextlib.suppress(sqlite3.Error):  # a reader in the way: next time
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._rows_since_checkpoint = self._commits_since_checkpoint = 0


class _Statements:
    """Runs of the same statement are sent with one `executemany`."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._sql: str | None = None
        self._rows: list[Sequence[Any]] = []

    def execute(self, sql: str, parameters: Sequence[Any]) -> None:
        if sql != self._sql:
            self.send()
            self._sql = sql
        self._rows.append(parameters)

    def send(self) -> None:
        if self._sql is not None:
            self._db.executemany(self._sql, self._rows)
        self._sql, self._rows = None, []


@functools.lru_cache(maxsize=EVENTS_PER_INSERT)
def _insert_events(count: int) -> str:
    """`INSERT_EVENT` for `count` rows at once (the same on every row: a row whose number is
    taken is skipped)."""
    return INSERT_EVENT + ", (?, ?, ?, ?, ?)" * (count - 1)


def _use_wal(db: sqlite3.Connection) -> None:
    """Puts the log in write-ahead mode (a setting of the file, made once by whoever opens it
    first). Switching needs the file to itself, and SQLite answers "database is locked" at once,
    without its busy wait, while another connection is reading it (several opening a new log
    together), so the switch is tried again until it is made or `BUSY_SECONDS` pass."""
    deadline = time.monotonic() + BUSY_SECONDS
    while db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        try:
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def _migrate(db: sqlite3.Connection) -> None:
    """Brings the schema up to date inside one write transaction, so two processes opening a
    new log at once cannot both migrate it."""
    if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[number - 1]:
                db.execute(statement)
            db.execute(f"PRAGMA user_version={number}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _close(writer: LogWriter, locks: RunLocks, db: sqlite3.Connection, *, fold: bool) -> None:
    writer.close()
    if fold:
        _fold(db)
    locks.close()
    with contextlib.suppress(sqlite3.Error):
        db.close()


def _fold(db: sqlite3.Connection) -> None:
    """Folds the write-ahead log back into the file and empties it. SQLite does so by itself
    only when the last connection closes, which never happens while a reader (the viewer, say)
    keeps the log open; readers hold no transaction between reads, so the fold waits at most
    for a read under way, and gives up after `FOLD_SECONDS` (the rest is folded later)."""
    with contextlib.suppress(sqlite3.Error):
        db.execute(f"PRAGMA busy_timeout={int(FOLD_SECONDS * 1000)}")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
