"""Writes run-log rows on a background thread, committing whatever has queued up together.

Recording an event on the loop's thread costs a queue put; serialising and committing happen on
the writer thread, which lets a burst gather for a couple of milliseconds so that a turn's events
share one wake-up and one commit. A process killed outright loses at most the events of those
last milliseconds, which `resume` treats as calls that did not finish. `flush()` waits until
everything queued so far is committed.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

from steadyloop.errors import SteadyloopError

__all__ = ["LogWriter", "Statements"]

logger = logging.getLogger("steadyloop.store")


class Statements:
    """What a write is handed: runs of the same statement are sent with one `executemany`."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._sql: str | None = None
        self._rows: list[Sequence[Any]] = []

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        if sql != self._sql:
            self.send()
            self._sql = sql
        self._rows.append(parameters)

    def send(self) -> None:
        """Sends what is collected."""
        if self._sql is not None:
            self._db.executemany(self._sql, self._rows)
        self._sql, self._rows = None, []


Write = Callable[[Statements], None]

GATHER_SECONDS = 0.002


class LogWriter:
    """A single writer thread for one SQLite connection; `lock` guards the connection."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self._db = db
        self._lock = lock
        self._queue: queue.SimpleQueue[Write | threading.Event | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        # Set by `flush` (and `close`) so the writer stops gathering and commits at once.
        self._hurry = threading.Event()

    def submit(self, write: Write) -> None:
        """Queues `write(db)` to run in a transaction on the writer thread."""
        self._raise_failure()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._work, name="steadyloop-log-writer", daemon=True
            )
            self._thread.start()
        self._queue.put(write)

    def flush(self) -> None:
        """Returns once every write queued before it is committed."""
        if self._thread is not None:
            done = threading.Event()
            self._queue.put(done)
            self._hurry.set()
            done.wait()
        self._raise_failure()

    def close(self) -> None:
        """Commits what is queued and stops the thread."""
        if self._thread is not None:
            self.flush()
            self._queue.put(None)
            self._hurry.set()
            self._thread.join()
            self._thread = None

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise SteadyloopError(
                f"writing the run log failed: {type(self._failure).__name__}: {self._failure}"
            ) from self._failure

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            # Let the burst this write starts gather for a moment: one wake-up and one commit
            # for a turn's events instead of one each (thread switches cost more than rows).
            if self._hurry.wait(GATHER_SECONDS):
                self._hurry.clear()
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            writes = [item for item in batch if callable(item)]
            if writes:
                self._commit(writes)
            for item in batch:
                if isinstance(item, threading.Event):
                    item.set()
            if None in batch:
                return

    def _commit(self, writes: list[Write]) -> None:
        with self._lock:
            try:
                self._db.execute("BEGIN")
                statements = Statements(self._db)
                for write in writes:
                    write(statements)
                statements.send()
                self._db.execute("COMMIT")
            except BaseException as exc:
                logger.exception("writing the run log failed")
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                self._failure = exc
