"""`RayEngine`: a batch on a Ray cluster (extra `steadyloop[ray]`).

A few long-lived async actors each build the agent once from the `"module:function"` factory and
run up to `per_worker` tasks at a time. The driver feeds them chunks of `chunk` tasks, keeping
each actor a little more than full, and takes each chunk's rows back as one list: one Ray call
per chunk, not per run (a call costs about a millisecond of CPU), and a list is all-or-nothing,
so a chunk retried after its actor died can neither lose nor repeat a row. A dead actor is
restarted and its chunks retried; with a run log, the retry reads back the runs that had
finished and resumes the ones that had not. A chunk that fails beyond its retries leaves its
tasks without rows, for the next run of the batch.

A rate limit is one token-bucket actor that every worker asks before each model call, so the
cap holds for the whole cluster.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steadyloop.batch.ratelimit import Rate, TokenBucket
from steadyloop.batch.results import Row
from steadyloop.batch.tasks import Task
from steadyloop.batch.worker import Job, Worker
from steadyloop.errors import ConfigError
from steadyloop.store import RunLog, open_store

__all__ = ["RayEngine"]

logger = logging.getLogger(__name__)

TASK_RETRIES = 3


@dataclass(frozen=True, slots=True)
class RayEngine:
    """Runs a batch on Ray: `workers` actors (default: one per CPU of the cluster), each with
    `per_worker` runs in flight, fed `chunk` tasks per call.

    `address` None joins the Ray already initialised in this process, or else starts a local
    one for the batch (stopped after it); otherwise it is a cluster's address ("HOST:PORT", or
    "auto" for the one on this machine). The factory's module must be importable on every
    node (a local Ray's workers can import from the current directory).
    """

    address: str | None = None
    workers: int | None = None
    per_worker: int = 256
    chunk: int = 50

    def __post_init__(self) -> None:
        for name in ("per_worker", "chunk"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"workers must be at least 1, got {self.workers}")

    def run(self, job: Job, tasks: Sequence[Task], emit: Callable[[Row], None]) -> None:
        """Runs `tasks` on the cluster, handing each chunk's rows to `emit` as it returns."""
        if not isinstance(job.factory, str):
            raise ConfigError(
                "RayEngine needs the agent factory as 'module:function': agents and factories "
                "are built on each worker, never shipped to it"
            )
        if isinstance(job.store, RunLog):
            raise ConfigError(
                "RayEngine needs the run log as a path or URL: each worker opens its own"
            )
        job = dataclasses.replace(job, store=_absolute(job.store))
        ray = _import_ray()
        started = not ray.is_initialized()
        if started and self.address is None:
            ray.init(include_dashboard=False, log_to_driver=False)
        elif started:
            ray.init(address=self.address, log_to_driver=False)
        try:
            _Driver(ray, self, job).run(tasks, emit)
        finally:
            if started:
                ray.shutdown()


class _Driver:
    """Creates the actors, feeds them chunks and collects their rows; stops them at the end."""

    def __init__(self, ray: Any, engine: RayEngine, job: Job) -> None:
        self.ray = ray
        self.engine = engine
        self.job = job

    def run(self, tasks: Sequence[Task], emit: Callable[[Row], None]) -> None:
        ray, engine = self.ray, self.engine
        count = engine.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        bucket = None
        if self.job.rate is not None:
            bucket = ray.remote(num_cpus=0)(_Bucket).remote(self.job.rate)
        actor_class = ray.remote(
            num_cpus=0, max_restarts=-1, max_task_retries=TASK_RETRIES, scheduling_strategy="SPREAD"
        )(_BatchActor)
        actors = [actor_class.remote(self.job, bucket, engine.per_worker) for _ in range(count)]
        try:
            self._check_ready(actors)
            self._feed(actors, _chunks(tasks, engine.chunk), emit)
            try:
                ray.get([actor.close.remote() for actor in actors])
            except ray.exceptions.RayError as exc:  # its rows are in; a run log commits anyway
                logger.warning("a Ray worker could not be closed: %s", exc)
        finally:
            for actor in [*actors, bucket]:
                if actor is not None:
                    ray.kill(actor, no_restart=True)

    def _check_ready(self, actors: list[Any]) -> None:
        """Waits for every actor to have built its agent; a factory or a log that failed on a
        worker is a `ConfigError` before any task starts."""
        try:
            errors = self.ray.get([actor.ready.remote() for actor in actors])
        except self.ray.exceptions.RayError as exc:
            raise ConfigError(f"the Ray workers could not start: {exc}") from exc
        for error in errors:
            if error is not None:
                raise ConfigError(error)

    def _feed(
        self, actors: list[Any], chunks: Iterator[list[Task]], emit: Callable[[Row], None]
    ) -> None:
        ray = self.ray
        # A little more than each actor's slots, so that it never waits on the driver.
        depth = -(-self.engine.per_worker // self.engine.chunk) + 1
        pending: dict[Any, tuple[int, int]] = {}

        def submit(index: int) -> None:
            chunk = next(chunks, None)
            if chunk is not None:
                pending[actors[index].run_chunk.remote(chunk)] = index, len(chunk)

        for index in range(len(actors)):
            for _ in range(depth):
                submit(index)
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            index, size = pending.pop(ref)
            try:
                rows = ray.get(ref)
            except ray.exceptions.RayError as exc:
                logger.warning("%d tasks were lost with their Ray worker: %s", size, exc)
            else:
                for row in rows:
                    emit(row)
            submit(index)


class _BatchActor:
    """One Ray worker: an agent built once, running the chunks it is sent."""

    def __init__(self, job: Job, bucket: Any, per_worker: int) -> None:
        self._slots = asyncio.Semaphore(per_worker)
        self._store: RunLog | None = None
        self._worker: Worker | None = None
        self._error: str | None = None
        try:
            self._store = open_store(job.store) if isinstance(job.store, str) else None
            acquire = _remote_acquire(bucket) if bucket is not None else None
            self._worker = Worker.build(job, self._store, acquire)
        except Exception as exc:
            self._error = str(exc) if isinstance(exc, ConfigError) else repr(exc)

    def ready(self) -> str | None:
        """None once the agent is built; otherwise why it could not be."""
        return self._error

    async def run_chunk(self, tasks: list[Task]) -> list[Row]:
        """The rows of `tasks`, in their order."""
        worker = self._worker
        assert worker is not None  # the driver sends no chunk to an actor that is not ready

        async def one(task: Task) -> Row:
            async with self._slots:
                return await worker.run(task)

        return list(await asyncio.gather(*(one(task) for task in tasks)))

    async def close(self) -> None:
        """Closes the agent and commits the log."""
        if self._worker is not None:
            await self._worker.aclose()
        if self._store is not None:
            await asyncio.to_thread(self._store.close)


class _Bucket:
    """The cluster's one token bucket: `reserve()` is `TokenBucket.reserve`."""

    def __init__(self, rate: Rate) -> None:
        self._bucket = TokenBucket(rate)

    def reserve(self) -> float:
        return self._bucket.reserve()


def _remote_acquire(bucket: Any) -> Callable[[], Any]:
    async def acquire() -> None:
        delay = await bucket.reserve.remote()
        if delay:
            await asyncio.sleep(delay)

    return acquire


def _chunks(tasks: Sequence[Task], size: int) -> Iterator[list[Task]]:
    for start in range(0, len(tasks), size):
        yield list(tasks[start : start + size])


def _absolute(store: str | None) -> str | None:
    """A SQLite path made absolute: workers do not share the driver's directory."""
    if store is None or ("://" in store and not store.startswith("sqlite:")):
        return store
    return str(Path(store.removeprefix("sqlite:///")).resolve())


def _import_ray() -> Any:
    """The `ray` module, or a `ConfigError` saying how to install it."""
    # Workers of a Ray started here run this interpreter; Ray's hook for `uv run` would instead
    # rebuild the project's environment in each worker, which can take minutes.
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("RayEngine needs Ray: pip install 'steadyloop[ray]'") from exc
    return ray
