"""`LocalEngine`: a batch in this process, on one event loop.

One agent runs every task, `concurrency` of them at a time; tasks are started as slots free up,
so a million-task batch holds only the runs in flight. This is the default: one asyncio process
does thousands of fake-model runs a second, more than most providers allow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from steadyloop.batch.ratelimit import TokenBucket, local_acquire
from steadyloop.batch.results import Row
from steadyloop.batch.tasks import Task
from steadyloop.batch.worker import Job, Worker
from steadyloop.errors import ConfigError
from steadyloop.store import RunLog, open_store

__all__ = ["LocalEngine"]


@dataclass(frozen=True, slots=True)
class LocalEngine:
    """Runs a batch in this process, `concurrency` runs at a time."""

    concurrency: int = 256

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {self.concurrency}")

    def run(self, job: Job, tasks: Sequence[Task], emit: Callable[[Row], None]) -> None:
        """Runs `tasks`, handing each row to `emit` as its run ends."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self._run(job, tasks, emit))
            return
        raise RuntimeError(
            "run_batch() was called inside a running event loop: call it from a thread "
            "(await asyncio.to_thread(run_batch, ...))"
        )

    async def _run(self, job: Job, tasks: Sequence[Task], emit: Callable[[Row], None]) -> None:
        store = open_store(job.store) if isinstance(job.store, str) else job.store
        try:
            acquire = local_acquire(TokenBucket(job.rate)) if job.rate is not None else None
            worker = Worker.build(job, store, acquire)
            try:
                await _run_all(worker, tasks, emit, self.concurrency)
            finally:
                await worker.aclose()
        finally:
            if isinstance(job.store, str) and isinstance(store, RunLog):
                await asyncio.to_thread(store.close)


async def _run_all(
    worker: Worker, tasks: Sequence[Task], emit: Callable[[Row], None], concurrency: int
) -> None:
    """Runs the tasks on `worker`, at most `concurrency` at a time. When a row cannot be
    written no more tasks start; on a cancel the runs in flight are cancelled (their logs say
    so) before it propagates."""
    slots = asyncio.Semaphore(concurrency)
    running: set[asyncio.Task[None]] = set()
    failures: list[Exception] = []

    async def one(task: Task) -> None:
        try:
            emit(await worker.run(task))
        except Exception as exc:
            failures.append(exc)
        finally:
            slots.release()

    try:
        for task in tasks:
            await slots.acquire()
            if failures:
                break
            started = asyncio.create_task(one(task))
            running.add(started)
            started.add_done_callback(running.discard)
        await asyncio.gather(*running)
    except BaseException:
        for started in running:
            started.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise
    if failures:
        raise failures[0]
