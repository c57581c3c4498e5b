"""One tool call under its deadline, however the tool behaves.

- A coroutine runs in the caller's own task, so a tool runs as one task from its first line to
  its last (as anyio cancel scopes and `asyncio.timeout` need) and costs no task, future or
  timer of its own. One coroutine that ends without waiting costs nothing more at all. One that
  waits is watched by its turn's `Deadlines`: a single timer for the earliest deadline of the
  turn's waiting calls. At its deadline the caller's task is cancelled for it (the call knows it
  was its deadline, not the turn being cancelled) and the tool has `CANCEL_GRACE` seconds to
  unwind; a tool that ignores the cancellation, or returns anyway, is answered "timed out" all
  the same. One still running after the grace is handed to a task of its own, at that moment,
  to end by itself, so the caller never waits for as long as the tool chooses. Cancelling the
  caller cancels the tool with the same grace.
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
from collections.abc import Awaitable, Callable, Coroutine, Generator
from concurrent.futures import Executor
from types import CoroutineType
from typing import Any

__all__ = ["CANCEL_GRACE", "DeadlinePassed", "Deadlines", "run_in_thread"]

CANCEL_GRACE = 0.1


class DeadlinePassed(Exception):
    """The call did not finish within its time."""


class Deadlines:
    """The deadlines of one turn's calls, kept by one timer at the earliest of them.

    `lingering` keeps the tasks of tools that outlived their call until they end, so that none
    is collected while it runs. `close()` once the turn is over.
    """

    __slots__ = ("_at", "_lingering", "_loop", "_timer", "_waiting")

    def __init__(self, lingering: set[asyncio.Task[None]]) -> None:
        self._loop = asyncio.get_running_loop()
        self._lingering = lingering
        self._waiting: list[_Waiting] = []
        self._timer: asyncio.TimerHandle | None = None
        self._at = 0.0

    async def run(self, awaitable: Awaitable[Any], seconds: float) -> Any:
        """Awaits `awaitable` in the current task for at most `seconds` (plus the grace to
        unwind)."""
        started = self._loop.time()
        coro = awaitable if type(awaitable) is CoroutineType else _awaiting(awaitable)
        try:
            waiting = coro.send(None)
        except StopIteration as done:
            return done.value
        deadlines = self
        if asyncio.get_running_loop() is not self._loop:  # a hook runs it on a loop of its own
            deadlines = Deadlines(self._lingering)
        return await _Waiting(coro, waiting, deadlines, started + seconds)

    def close(self) -> None:
        """Stops the timer, unless a call still needs it (its turn was left while it unwinds)."""
        if self._timer is not None and not self._waiting:
            self._timer.cancel()
            self._timer = None

    def _watch(self, call: _Waiting) -> None:
        """Acts on `call` at its `at`: moves the timer earlier when it is due first."""
        if call not in self._waiting:
            self._waiting.append(call)
        if self._timer is None or call.at < self._at:
            self._arm(call.at)

    def _forget(self, call: _Waiting) -> None:
        if call in self._waiting:
            self._waiting.remove(call)

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._at = at
        self._timer = self._loop.call_at(at, self._on_time)

    def _on_time(self) -> None:
        """On the timer: acts on every call that is due, then waits for the next one."""
        self._timer = None
        due = [call for call in self._waiting if call.at <= self._at]
        for call in due:
            call.due(self._loop.time())
        if self._waiting:
            self._arm(min(call.at for call in self._waiting))


class _Waiting:
    """A tool's coroutine that waited on its first step, driven on step by step in the
    caller's task: each wait the tool yields is the task's, until the tool is cut short (its
    deadline, or its caller cancelled). From then on each of its waits is watched through a
    future of ours, so that at the end of the grace it can be let go of without touching what
    the tool waits on."""

    __slots__ = ("_coro", "_deadlines", "_first", "_proxy", "_task", "at", "cut", "expired", "gone")

    def __init__(
        self, coro: Coroutine[Any, Any, Any], first: Any, deadlines: Deadlines, at: float
    ) -> None:
        self._coro = coro
        self._first = first
        self._deadlines = deadlines
        task = asyncio.current_task()
        assert task is not None  # a coroutine that waited runs in a task
        self._task = task
        self._proxy: asyncio.Future[None] | None = None
        self.at = at  # when the timer acts: the deadline, then the end of the grace
        self.expired = False  # its deadline passed: its task was cancelled for it
        self.cut = False  # cut short (its deadline or its caller): the tool is unwinding
        self.gone = False  # the grace is over: the rest of the tool runs in a task of its own
        deadlines._watch(self)

    def due(self, now: float) -> None:
        """The timer's part: cancel the task at the deadline, let go at the end of the grace."""
        if not self.cut:
            self.expired = self.cut = True
            self.at = now + CANCEL_GRACE
            self._task.cancel()
            return
        self.gone = True
        self._deadlines._forget(self)
        if self._proxy is not None and not self._proxy.done():
            self._proxy.set_result(None)

    def __await__(self) -> Generator[Any, None, Any]:
        """Steps the tool as its task would: what it waits on goes to the task, what the task
        hands back goes to the tool. Returns or raises as the tool does, unless it was cut
        short: then `DeadlinePassed`, or `CancelledError` when its caller was cancelled."""
        coro, waiting = self._coro, self._first
        del self._first
        try:
            while True:
                error: BaseException | None = None
                try:
                    if not self.cut:
                        yield waiting
                    else:
                        yield from self._unwinding(waiting)
                        if self.gone:
                            self._let_go(waiting)
                            break
                        if asyncio.isfuture(waiting):
                            waiting.result()  # its outcome, for the tool, as a task hands it
                except GeneratorExit:
                    coro.close()
                    raise
                except BaseException as exc:
                    if isinstance(exc, asyncio.CancelledError) and self._task.cancelling():
                        self._cut_short()
                    error = exc
                try:
                    waiting = coro.send(None) if error is None else coro.throw(error)
                except StopIteration as done:
                    if self.cut:
                        break
                    return done.value
                except BaseException:
                    if self.cut:
                        break
                    raise
                finally:
                    del error
        finally:
            self._deadlines._forget(self)
        raise self._outcome()

    def _unwinding(self, waiting: Any) -> Generator[Any, None, None]:
        """Waits for what the unwinding tool waits on, or for the end of its grace; a caller's
        cancellation meanwhile reaches the tool."""
        if not asyncio.isfuture(waiting):
            yield waiting  # a bare yield (`sleep(0)`): the task steps it again at once
            return
        waiting.add_done_callback(self._woken)
        while not (waiting.done() or self.gone):
            self._proxy = self._deadlines._loop.create_future()
            try:
                yield from self._proxy
            except asyncio.CancelledError:
                if not waiting.cancel():
                    raise
            finally:
                self._proxy = None

    def _woken(self, _: object) -> None:
        if self._proxy is not None and not self._proxy.done():
            self._proxy.set_result(None)

    def _cut_short(self) -> None:
        """The task was cancelled (for the deadline, or by its caller): the tool has the grace
        to unwind."""
        if not self.cut:
            self.cut = True
            self.at = self._deadlines._loop.time() + CANCEL_GRACE
            self._deadlines._watch(self)

    def _let_go(self, waiting: Any) -> None:
        """The tool outlived its grace: the rest of it runs in a task of its own."""
        task = self._deadlines._loop.create_task(_alone(self._coro, waiting))
        lingering = self._deadlines._lingering
        lingering.add(task)
        task.add_done_callback(lingering.discard)

    def _outcome(self) -> BaseException:
        """What answers a call cut short: its deadline passed, unless its caller was cancelled."""
        if self.expired and self._task.uncancel() == 0:
            return DeadlinePassed()
        return asyncio.CancelledError()


async def _awaiting(awaitable: Awaitable[Any]) -> Any:
    """Any awaitable as a coroutine, which can be driven step by step."""
    return await awaitable


async def _alone(coro: Coroutine[Any, Any, Any], waiting: Any) -> None:
    """The rest of a tool that outlived its call; whatever it returns or raises is dropped."""
    try:
        await _Relay(coro, waiting)
    except BaseException:  # nobody is left to hear it: the call was answered
        return


class _Relay:
    """Drives on, in the current task, a coroutine that is waiting on `waiting`."""

    __slots__ = ("_coro", "_waiting")

    def __init__(self, coro: Coroutine[Any, Any, Any], waiting: Any) -> None:
        self._coro, self._waiting = coro, waiting

    def __await__(self) -> Generator[Any, None, None]:
        coro, waiting = self._coro, self._waiting
        while True:
            if asyncio.isfuture(waiting):
                waiting._asyncio_future_blocking = True  # as the future's own `await` left it
            try:
                try:
                    yield waiting
                except BaseException as exc:
                    waiting = coro.throw(exc)
                else:
                    waiting = coro.send(None)
            except StopIteration:
                return


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
