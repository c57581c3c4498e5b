"""Batches: one agent over thousands of tasks, resumable by running the batch again.

`run_batch(factory, tasks, out=...)` runs each task of a JSON-lines file once and appends a row
per task to `out`; with a run log, a batch killed half-way goes on from the log when run again,
re-running only the calls that were in flight. The engine is `LocalEngine` (this process).
"""

from __future__ import annotations

from steadyloop.batch.local import LocalEngine
from steadyloop.batch.ratelimit import Rate
from steadyloop.batch.report import BatchReport
from steadyloop.batch.runner import Engine, run_batch
from steadyloop.batch.tasks import BadTask, Task

__all__ = [
    "BadTask",
    "BatchReport",
    "Engine",
    "LocalEngine",
    "Rate",
    "Task",
    "run_batch",
]
