"""One tool call under its deadline, however the tool behaves.

- A coroutine runs in a task of its own. At the deadline that task is cancelled and has
  `CANCEL_GRACE` seconds to unwind; a tool that ignores the cancellation, or returns anyway, is
  answered "timed out" all the same and its task is left to end by itself. Running the tool in
  the caller's own task would make the caller wait for as long as the tool chooses.
- A sync function runs in a worker thread, and its deadline counts from when its code starts,
  not from when it was handed to the executor: a call waiting for a free thread has not used any
  of its time, so it is never answered "timed out" and then run anyway. A thread still running at
  the deadline cannot be stopped; it is left to finish and whatever it returns is discarded.

Both raise `DeadlinePassed` when the time is up, and hand back everything else the tool raised.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

__all__ = ["CANCEL_GRACE", "DeadlinePassed", "await_with_deadline", "run_in_thread"]

CANCEL_GRACE = 0.1


class DeadlinePassed(Exception):
    """The call did not finish within its time."""


async def await_with_deadline(
    awaitable: Awaitable[Any], seconds: float, lingering: set[asyncio.Task[None]]
) -> Any:
    """Awaits `awaitable` in a task of its own for at most `seconds` (plus the grace to unwind).

    A task that outlives its call is kept in `lingering` until it ends, so it is not collected
    while it runs. Cancelling the caller cancels the task, with the same grace.
    """
    call = _TaskCall(awaitable, seconds)
    try:
        ok, value = await call.outcome
    except asyncio.CancelledError:
        call.timer.cancel()
        call.task.cancel()
        await asyncio.wait((call.task,), timeout=CANCEL_GRACE)
        _linger(call.task, lingering)
        raise
    call.timer.cancel()
    _linger(call.task, lingering)
    expired = call.expired
    # The tool's exception holds this frame in its traceback; without `call` or `value` here
    # the two do not keep each other (and the agent) alive until a garbage collection.
    del call
    if expired:
        raise DeadlinePassed
    if ok:
        return value
    try:
        raise value
    finally:
        del value


class _TaskCall:
    """A tool's awaitable in its own task, and the deadline that cancels that task."""

    __slots__ = ("expired", "outcome", "task", "timer")

    def __init__(self, awaitable: Awaitable[Any], seconds: float) -> None:
        loop = asyncio.get_running_loop()
        self.expired = False
        # Set by the task when the tool ends, or at the end of the grace: the caller never
        # waits on the task itself, which may outlive the call.
        self.outcome: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        self.task = loop.create_task(self._run(awaitable))
        self.timer = loop.call_later(seconds, self._expire)

    async def _run(self, awaitable: Awaitable[Any]) -> None:
        # Every exception comes back as a value: asyncio would re-raise a KeyboardInterrupt or
        # SystemExit from a task straight out of the event loop, past the turn's bookkeeping.
        try:
            outcome = (True, await awaitable)
        except BaseException as exc:
            outcome = (False, exc)
        if not self.outcome.done():
            self.outcome.set_result(outcome)
        del self, outcome  # the exception's traceback holds this frame: no cycle through them

    def _expire(self) -> None:
        if self.outcome.done():
            return
        self.expired = True
        self.task.cancel()
        self.timer = asyncio.get_running_loop().call_later(CANCEL_GRACE, self._give_up)

    def _give_up(self) -> None:
        if not self.outcome.done():
            self.outcome.set_result((False, DeadlinePassed()))


def _linger(task: asyncio.Task[None], lingering: set[asyncio.Task[None]]) -> None:
    if not task.done():
        lingering.add(task)
        task.add_done_callback(lingering.discard)


async def run_in_thread(fn: Callable[[], Any], seconds: float, executor: Executor) -> Any:
    """Runs `fn()` in `executor`; raises `DeadlinePassed` `seconds` after `fn` starts running."""
    call = _ThreadCall(fn, seconds, executor)
    try:
        return await call.future
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if call.expired and (task is None or task.cancelling() == 0):
            raise DeadlinePassed from None
        raise
    finally:
        call.timer.cancel()
        # The tool's exception (in `call.future`) holds this frame in its traceback: without
        # `call` here the two do not keep each other (and the thread pool) alive.
        del call


class _ThreadCall:
    """A sync call in a worker thread, whose deadline counts from when its code starts.

    The timer is first set as if the call started at once, which it nearly always does. When it
    fires early it is moved to the real start plus `seconds`; when the call has not started yet,
    the worker thread re-checks it as the call starts. So a call that starts at once costs no
    extra wake-up of the event loop.
    """

    __slots__ = (
        "_fn",
        "_lock",
        "_loop",
        "_seconds",
        "_started",
        "_waiting",
        "expired",
        "future",
        "timer",
    )

    def __init__(self, fn: Callable[[], Any], seconds: float, executor: Executor) -> None:
        self._loop = asyncio.get_running_loop()
        self._fn = fn
        self._seconds = seconds
        self._lock = threading.Lock()
        self._started: float | None = None
        self._waiting = False  # the timer fired before the call started
        self.expired = False
        self.future = self._loop.run_in_executor(executor, self._run)
        self.timer = self._loop.call_later(seconds, self._check)

    def _run(self) -> Any:
        """In the worker thread: notes the start, then runs the call."""
        with self._lock:
            self._started = time.monotonic()
            waiting = self._waiting
        if waiting:
            self._loop.call_soon_threadsafe(self._check)
        fn = self._fn
        # What `fn` raises ends up in `self.future`, and its traceback holds this frame: without
        # `self` here the two do not keep each other alive until a garbage collection.
        del self
        return fn()

    def _check(self) -> None:
        """On the event loop: ends the wait once the call has run for its `seconds`."""
        if self.future.done():
            return
        with self._lock:
            started = self._started
            self._waiting = started is None
        if started is None:
            return  # still waiting for a thread; `_run` checks again when it starts
        left = started + self._seconds - time.monotonic()
        if left > 0:
            self.timer = self._loop.call_later(left, self._check)
        else:
            self.expired = True
            self.future.cancel()  # the thread runs on; its result is discarded
