"""Claims taken from async code: off the event loop when the log waits on the network, and never
kept by a caller cancelled while one is being taken.

A claim taken in a worker thread goes on when the task awaiting it is cancelled (a thread cannot
be stopped), and a claim nobody runs under would hold its run or session until the log closes.
So the worker gives back a claim it took for a caller that is gone, a caller cancelled just
after the claim was taken releases it itself, and either way the caller leaves only once the
claim is given back: a run or resume sent again right after the cancel finds it free.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from steadyloop.store.protocol import RunLog

__all__ = ["claim"]


async def claim(store: RunLog, run_id: str) -> None:
    """`store.claim(run_id)` from async code (`ConfigError` when a live run holds it). A caller
    cancelled while it is taken leaves once the claim is given back (or was never taken)."""
    if not store.blocking_io:
        store.claim(run_id)  # on the loop with no pause after it: no cancel lands in between
        return
    taking = _Taking(store, run_id)
    done = asyncio.get_running_loop().run_in_executor(None, taking.take)
    try:
        await asyncio.shield(done)
    except asyncio.CancelledError:
        await asyncio.shield(_give_back(taking, done))  # whatever else is cancelled meanwhile
        raise


async def _give_back(taking: _Taking, done: asyncio.Future[None]) -> None:
    """Sees a cancelled caller's claim given back: by the worker, which gives back what it takes
    from now on, or here, when the claim was taken before the cancel."""
    if taking.abandon():
        await asyncio.to_thread(taking.release)
    else:
        await asyncio.wait([done])


class _Taking:
    """One claim taken in a worker thread for a caller that may be cancelled meanwhile."""

    def __init__(self, store: RunLog, run_id: str) -> None:
        self._store, self._run_id = store, run_id
        self._lock = threading.Lock()
        self._abandoned = self._held = False

    def take(self) -> None:
        """Takes the claim (the worker's part); gives it back when the caller is gone."""
        self._store.claim(self._run_id)
        with self._lock:
            self._held = not self._abandoned
        if not self._held:
            self.release()

    def abandon(self) -> bool:
        """Tells the worker its caller is gone; True when the claim was taken already (the
        caller's to give back)."""
        with self._lock:
            self._abandoned = True
            return self._held

    def release(self) -> None:
        self._store.release(self._run_id)
