"""Writes run-log rows: on a background thread, or at once where a run must not go on before
its rows are safe.

Recording an event costs a queue put; serialising and committing happen later, together. The
background thread lets a burst gather for a couple of milliseconds so a turn's events share one
wake-up and one commit. `commit()` is the write-ahead point of a run (`durability="turn"`): it
returns once everything queued before it is committed. It commits on the caller's thread when
the connection and the file are free (a few rows, no fsync: far cheaper than a hand-off to the
thread and back) and waits for the thread otherwise, so the event loop never blocks on another
process's lock. Checkpoints (copying the write-ahead log into the file, with an fsync) run on
the background thread only.

A write that fails (disk full, a damaged page, a lock held too long) fails only its own run:
the batch is rolled back and its writes are tried again one by one, so the other runs' rows
still land; the failed run's later event rows are dropped (its log stays a clean prefix that
`resume` can continue) and `failure(run_id)` reports the cause until `forget(run_id)`. The
store goes on writing for every other run and recovers once the cause is gone.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BUSY_SECONDS", "LogWriter", "Statements"]

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
# Rows written after which the background thread folds the write-ahead log into the file.
CHECKPOINT_ROWS = 1000
# Seconds a connection waits for another process's write to finish before giving up.
BUSY_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class _Job:
    """One queued write: `run_id` names the run it belongs to; `event` rows are dropped once
    that run has failed (status updates still go through)."""

    run_id: str | None
    write: Write
    event: bool


class _Done:
    """A marker the writer sets once everything queued before it is committed."""

    def __init__(self) -> None:
        self.done = threading.Event()

    def set(self) -> None:
        self.done.set()


class _AsyncDone(_Done):
    """A marker that also wakes an awaiting task on its own event loop."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[None] = self.loop.create_future()

    def set(self) -> None:
        super().set()
        # A closed loop raises RuntimeError: nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(_resolve, self.future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_Item = _Job | _Done | None


class LogWriter:
    """A single writer thread for one SQLite connection; `lock` guards the connection.

    Queued items stay in `_items` until whoever commits them takes them out holding `lock`, so
    a commit on the caller's thread sees everything not yet committed (or finds the lock held by
    the thread, whose batch may hold its rows, and waits for it instead).
    """

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self._db = db
        self._lock = lock
        self._items: collections.deque[_Item] = collections.deque()
        self._wake = threading.Event()
        # Set by `commit`, `flush` and `close` so the thread stops gathering and commits at once.
        self._hurry = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._failed: dict[str | None, BaseException] = {}
        self._rows_since_checkpoint = 0
        self._changes_seen = db.total_changes
        db.execute("PRAGMA wal_autocheckpoint=0")

    def submit(self, write: Write, run_id: str | None, *, event: bool = True) -> None:
        """Queues `write(db)` to run in a transaction."""
        if self._thread is None:
            self._start()
        self._items.append(_Job(run_id, write, event))
        self._wake.set()

    def failure(self, run_id: str | None) -> BaseException | None:
        """Why a write of run `run_id` failed, or None when all of them landed so far."""
        return self._failed.get(run_id)

    def forget(self, run_id: str | None) -> None:
        """Clears the run's failure: its later writes are attempted again."""
        self._failed.pop(run_id, None)

    async def commit(self) -> None:
        """Returns once every write queued before it is committed, without blocking the loop."""
        if self._thread is None or self._commit_here():
            return
        marker = _AsyncDone()
        self._enqueue_urgent(marker)
        await marker.future

    def flush(self) -> None:
        """Returns once every write queued before it is committed (blocks the caller)."""
        if self._thread is not None:
            marker = _Done()
            self._enqueue_urgent(marker)
            marker.done.wait()

    def close(self) -> None:
        """Commits what is queued and stops the thread."""
        if self._thread is not None:
            self.flush()
            self._enqueue_urgent(None)
            self._thread.join()
            self._thread = None

    def _enqueue_urgent(self, item: _Item) -> None:
        self._items.append(item)
        self._hurry.set()
        self._wake.set()

    def _commit_here(self) -> bool:
        """Commits what is queued on this thread if that needs no waiting; False otherwise."""
        if not self._lock.acquire(blocking=False):
            return False  # the thread is committing: its batch may hold our rows
        try:
            items = self._take()
            jobs = [item for item in items if isinstance(item, _Job)]
            if jobs and not self._commit_unless_busy(jobs):
                self._items.extendleft(reversed(items))  # back, ahead of anything newer
                return False
        finally:
            self._lock.release()
        for item in items:
            if isinstance(item, _Done):
                item.set()
            elif item is None:
                self._enqueue_urgent(None)  # a stop request is the thread's to act on
        if self._rows_since_checkpoint >= CHECKPOINT_ROWS:
            self._wake.set()
        return True

    def _take(self) -> list[_Item]:
        """Everything queued now, in order (the caller holds `lock`)."""
        items: list[_Item] = []
        while True:
            try:
                items.append(self._items.popleft())
            except IndexError:
                return items

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                thread = threading.Thread(
                    target=self._work, name="steadyloop-log-writer", daemon=True
                )
                thread.start()
                self._thread = thread

    def _work(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            # Let the burst gather for a moment: one wake-up and one commit for a turn's events
            # instead of one each (thread switches cost more than rows).
            if self._hurry.wait(GATHER_SECONDS):
                self._hurry.clear()
            with self._lock:
                items = self._take()
                jobs = [item for item in items if isinstance(item, _Job)]
                if jobs:
                    self._commit(jobs)
                if self._rows_since_checkpoint >= CHECKPOINT_ROWS:
                    self._checkpoint()
            for item in items:
                if isinstance(item, _Done):
                    item.set()
            if None in items:
                return

    def _commit_unless_busy(self, jobs: list[_Job]) -> bool:
        """Commits on the caller's thread unless another process holds the file's write lock."""
        db = self._db
        db.execute("PRAGMA busy_timeout=0")
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return False
        finally:
            db.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
        self._commit(jobs, begun=True)
        return True

    def _commit(self, jobs: list[_Job], *, begun: bool = False) -> None:
        """Commits the jobs in one transaction, or one by one when that fails."""
        jobs = [job for job in jobs if not (job.event and job.run_id in self._failed)]
        if self._transaction(jobs, begun=begun) is None:
            return
        # Something failed: find whose write it was, so only that run fails.
        for job in jobs:
            if job.event and job.run_id in self._failed:
                continue
            error = self._transaction([job])
            if error is not None:
                logger.debug("writing the run log failed", exc_info=error)
                self._failed.setdefault(job.run_id, error)

    def _transaction(self, jobs: list[_Job], *, begun: bool = False) -> BaseException | None:
        """Runs the jobs in one transaction; the exception that rolled it back, if any."""
        db = self._db
        try:
            if not begun:
                db.execute("BEGIN IMMEDIATE")
            statements = Statements(db)
            for job in jobs:
                job.write(statements)
            statements.send()
            db.execute("COMMIT")
        except Exception as exc:
            with contextlib.suppress(sqlite3.Error):  # an unusable connection says so next time
                if db.in_transaction:
                    db.execute("ROLLBACK")
            return exc
        self._rows_since_checkpoint += db.total_changes - self._changes_seen
        self._changes_seen = db.total_changes
        return None

    def _checkpoint(self) -> None:
        """Folds the write-ahead log into the file (the caller holds `lock`)."""
        with contextlib.suppress(sqlite3.Error):  # a reader in the way: next time
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._rows_since_checkpoint = 0
