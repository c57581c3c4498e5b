"""One sync tool call under its deadline.

A sync function runs in a worker thread, and its deadline counts from when its code starts, not
from when it was handed to the executor: a call waiting for a free thread has not used any of
its time, so it is never answered "timed out" and then run anyway. A thread still running at the
deadline cannot be stopped; it is left to finish and whatever it returns is discarded.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

__all__ = ["DeadlinePassed", "run_in_thread"]


class DeadlinePassed(Exception):
    """The call did not finish within its time."""


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
        return self._fn()

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
