"""Batches: one agent over thousands of tasks, resumable by running the batch again.

`run_batch(factory, tasks, out=...)` runs each task of a JSON-lines file once and appends a row
per task to `out`; with a run log, a batch killed half-way goes on from the log when run again,
re-running only the calls that were in flight. Engines: `LocalEngine` (this process, the
default) and `RayEngine` (a Ray cluster, extra `steadyloop[ray]`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steadyloop.batch.local import LocalEngine
from steadyloop.batch.ratelimit import Rate
from steadyloop.batch.report import BatchReport
from steadyloop.batch.runner import Engine, run_batch
from steadyloop.batch.tasks import BadTask, Task

if TYPE_CHECKING:
    from steadyloop.batch.ray import RayEngine

__all__ = [
    "BadTask",
    "BatchReport",
    "Engine",
    "LocalEngine",
    "Rate",
    "RayEngine",
    "Task",
    "run_batch",
]


def __getattr__(name: str) -> object:
    """`RayEngine` is imported on first use (it needs the `ray` extra)."""
    if name == "RayEngine":
        from steadyloop.batch.ray import RayEngine

        return RayEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
