"""Writes run-log rows: on a background thread, or at once where a run must not go on before
its rows are safe. The database itself is a `Backend`; this module decides when and with what.

Recording an event costs a queue append; serialising and committing happen later, together. The
background thread lets a burst gather for a couple of milliseconds so a turn's events share one
wake-up and one commit. `commit()` is the write-ahead point of a run (`durability="turn"`): it
returns once everything queued before it is committed. It commits on the caller's thread when
the backend is a local file that can start a transaction without waiting (a few rows: far
cheaper than a hand-off to the thread and back) and waits for the thread otherwise, so the event
loop never blocks on another connection's lock or on a server; once a commit finds the thread
stuck waiting, the next ones go straight to it until it is through. The thread commits only
rows nobody committed within its gathering time, so it does not race such a run for its own
rows. With such a local file, rows recorded on an event loop do not wake the thread at all: a
run that reaches its next commit point first commits them itself, and rows still queued once
the gathering time is up are committed by a timer on the loop the same way (the thread takes
them only when that would mean waiting). Waking a thread is not free for the rest of the
process: measured on two virtual cores, the event loop's thread ran up to half again as slow
for about 15 ms after each wake-up. `flush()` commits on the caller's thread the same way.
Upkeep (SQLite's checkpoints) runs on the background thread only: after its own commits, and
woken for it once the callers' commits have made it due.

A write that fails (disk full, a damaged page, a lock held too long, a dropped connection)
fails only its own run: the batch is rolled back and its rows are tried again run by run, so
the other runs' rows still land; the failed run's later event rows are dropped (its log stays a
clean prefix that `resume` can continue) and `failure(run_id)` reports the cause until
`forget(run_id)`. The store goes on writing for every other run and recovers once the cause is
gone.

Items stay in the queue until whoever commits them takes them out holding `lock`, so a commit on
the caller's thread sees everything not yet committed (or finds the lock held by the thread,
whose batch may hold its rows, and waits for it instead).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
from collections.abc import Sequence
from itertools import groupby
from typing import Protocol

from steadyloop.store.recording import FinishRow, Row, StatusRow

__all__ = ["Backend", "LogWriter"]

logger = logging.getLogger("steadyloop.store")

GATHER_SECONDS = 0.002
# How long a commit on the caller's thread waits for the background thread's commit to end.
HANDOVER_SECONDS = 0.002


class Backend(Protocol):
    """A database connection as the writer uses it (only ever from one thread at a time)."""

    commits_here: bool
    """Whether `commit()` may commit on the caller's thread when that needs no waiting (a local
    file); False where every commit is a round trip to a server."""

    def begin(self, *, wait: bool) -> bool:
        """Starts a write transaction; False (nothing started) when that would mean waiting."""

    def write(self, rows: Sequence[Row]) -> None:
        """Writes the rows in the open transaction."""

    def commit(self) -> None: ...

    def rollback(self) -> None:
        """Ends a failed transaction; never raises."""

    def upkeep(self) -> None:
        """Periodic work after commits, on the background thread (e.g. a checkpoint). Called
        without `lock`, often: it takes the lock itself only when it has work to do, so a
        commit on the caller's thread seldom finds the lock taken."""

    def upkeep_due(self) -> bool:
        """Whether `upkeep` has work to do now (read without `lock`: a hint)."""


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


_Item = Row | _Done | None
_EMPTY = object()


class LogWriter:
    """A single writer thread for one backend; `lock` guards the backend's connection."""

    def __init__(self, backend: Backend, lock: threading.Lock) -> None:
        self._backend = backend
        self._lock = lock
        self._items: collections.deque[_Item] = collections.deque()
        self._wake = threading.Event()
        # Set by `commit`, `flush` and `close` so the thread stops gathering and commits at once.
        self._hurry = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._failed: dict[str, BaseException] = {}
        # Set when a commit found the thread waiting on the database (another connection's
        # lock, a slow server), cleared by the thread once through: until then commits go
        # straight to the thread instead of each waiting `HANDOVER_SECONDS` for it first.
        self._stalled = False

    def submit(self, row: Row) -> None:
        """Queues a row to write. When the queue was empty, whoever commits it is told (and
        takes everything queued by then): the thread at once, or, for a row recorded on an
        event loop whose runs commit on their own thread, a timer of the loop's once the
        gathering time is up (`_commit_if_queued`)."""
        if self._thread is None:
            self._start()
        was_empty = not self._items
        self._items.append(row)
        if not was_empty:
            return
        if self._backend.commits_here:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # a worker thread's row (a status, a run started off the loop)
                pass
            else:
                loop.call_later(GATHER_SECONDS, self._commit_if_queued, row)
                return
        if not self._wake.is_set():
            self._wake.set()

    def _commit_if_queued(self, row: Row) -> None:
        """On the loop, once `row` has gathered for its time: if it still heads the queue
        (nobody committed it: a run waiting on a slow call, a run that commits only at its
        end), commits it with everything queued after it here, as a run's own commit would
        (waiting at most `HANDOVER_SECONDS` for the thread's commit); hands them to the thread
        when that would mean waiting longer (the database busy, the thread stuck)."""
        items = self._items
        if items and items[0] is row and not self._commit_here():
            self._hurry.set()
            self._wake.set()

    def failure(self, run_id: str) -> BaseException | None:
        """Why a write of run `run_id` failed, or None when all of them landed so far."""
        return self._failed.get(run_id)

    def forget(self, run_id: str) -> None:
        """Clears the run's failure: its later writes are attempted again."""
        self._failed.pop(run_id, None)

    async def commit(self) -> None:
        """Returns once every row queued before it is committed, without blocking the loop."""
        if self._thread is None or (self._backend.commits_here and self._commit_here()):
            return
        marker = _AsyncDone()
        self._enqueue_urgent(marker)
        await marker.future

    def flush(self) -> None:
        """Returns once every row queued before it is committed (blocks the caller); on the
        caller's thread where `commit()` would commit there."""
        if self._thread is None or (self._backend.commits_here and self._commit_here()):
            return
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
        """Commits what is queued on this thread if that needs no real waiting; False
        otherwise. The thread's own commit (which may hold our rows) usually ends within a
        fraction of a millisecond: that much is worth waiting for, a lock held longer is not."""
        if self._stalled or not self._lock.acquire(timeout=HANDOVER_SECONDS):
            self._stalled = True
            return False
        try:
            items = self._take()
            rows = [item for item in items if not isinstance(item, _Done | None)]
            if rows and not self._commit(rows, wait=False):
                self._items.extendleft(reversed(items))  # back, ahead of anything newer
                self._stalled = True
                return False
        finally:
            self._lock.release()
        for item in items:
            if isinstance(item, _Done):
                item.set()
            elif item is None:
                self._enqueue_urgent(None)  # a stop request is the thread's to act on
        if self._backend.upkeep_due() and not self._wake.is_set():
            self._wake.set()  # the thread checkpoints after the commits made here too
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
            items: list[_Item] = []
            if self._gathered():
                with self._lock:
                    items = self._take()
                    rows = [item for item in items if not isinstance(item, _Done | None)]
                    if rows:
                        self._commit(rows, wait=True)
                self._stalled = False
                for item in items:
                    if isinstance(item, _Done):
                        item.set()
            self._backend.upkeep()  # after this thread's commits and the callers' alike
            if None in items:
                return

    def _gathered(self) -> bool:
        """Lets a burst gather for a moment, so a turn's events share one wake-up and one commit
        (thread switches cost more than rows): True once the rows at the head of the queue have
        waited `GATHER_SECONDS` or someone hurries; False when the queue empties meanwhile.

        A run that commits at its own write-ahead points on the caller's thread takes its rows
        well within that time: the thread then leaves them to it instead of taking them first
        and making the caller wait for the lock."""
        head = self._head()
        while not self._hurry.wait(GATHER_SECONDS):
            now = self._head()
            if now is _EMPTY:
                return False
            if now is head:
                return True
            head = now
        self._hurry.clear()
        return True

    def _head(self) -> object:
        """The oldest item queued, `_EMPTY` when there is none."""
        try:
            return self._items[0]
        except IndexError:
            return _EMPTY

    def _commit(self, rows: list[Row], *, wait: bool) -> bool:
        """Commits the rows in one transaction, or run by run when that fails; False when the
        backend was busy and `wait` is False (nothing written)."""
        if self._failed:
            rows = [row for row in rows if not self._dropped(row)]
        try:
            if not self._backend.begin(wait=wait):
                return False
        except Exception as exc:
            self._fail_all(rows, exc)
            return True
        if self._transaction(rows, begun=True) is None:
            return True
        # Something failed: find whose rows they were, so only that run fails.
        for run_id, group in groupby(rows, key=lambda row: row.run_id):
            run_rows = [row for row in group if not self._dropped(row)]
            error = self._transaction(run_rows) if run_rows else None
            if error is not None:
                logger.debug("writing the run log failed", exc_info=error)
                self._failed.setdefault(run_id, error)
        return True

    def _dropped(self, row: Row) -> bool:
        """A failed run's event rows are dropped; its status rows still go through."""
        return row.run_id in self._failed and not isinstance(row, StatusRow)

    def _fail_all(self, rows: list[Row], exc: BaseException) -> None:
        logger.debug("writing the run log failed", exc_info=exc)
        for row in rows:
            if not isinstance(row, StatusRow | FinishRow):
                self._failed.setdefault(row.run_id, exc)

    def _transaction(self, rows: list[Row], *, begun: bool = False) -> BaseException | None:
        """Writes the rows in one transaction; the exception that rolled it back, if any."""
        backend = self._backend
        try:
            if not begun:
                backend.begin(wait=True)
            backend.write(rows)
            backend.commit()
        except Exception as exc:
            backend.rollback()
            return exc
        return None
