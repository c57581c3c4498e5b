"""`run_batch`: every task of a file run once, resumably, on an engine.

The results file and the run log together are the batch's state. A task with a row in the
results file is done and skipped; every other task runs as run `"{batch}:{id}"`, which the log
resumes when an earlier attempt was cut short (a finished run's logged result is read back
without calling the model). So running the same batch again is how it is resumed, after a kill
as after a crash, and a batch that has finished costs nothing to run again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from steadyloop.batch.local import LocalEngine
from steadyloop.batch.progress import progress_bar
from steadyloop.batch.ratelimit import Rate
from steadyloop.batch.report import BatchReport, Tally
from steadyloop.batch.results import ResultsFile, Row
from steadyloop.batch.tasks import Task, read_tasks
from steadyloop.batch.worker import Factory, Job
from steadyloop.errors import ConfigError
from steadyloop.store import RunLog

__all__ = ["Engine", "run_batch"]


class Engine(Protocol):
    """Where a batch's runs happen (`LocalEngine`, `RayEngine`)."""

    def run(self, job: Job, tasks: Sequence[Task], emit: Callable[[Row], None]) -> None:
        """Runs `tasks`, handing each row to `emit` (in this thread) as its run ends; a task
        whose run was lost gets no row."""


def run_batch(
    agent_factory: Factory,
    tasks: str | Path | Iterable[Mapping[str, Any]],
    *,
    out: str | Path,
    store: RunLog | str | Path | None = None,
    batch: str | None = None,
    engine: Engine | None = None,
    rate_limit: str | Rate | None = None,
    durability: Literal["turn", "batch"] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> BatchReport:
    """Runs each task once, appending its result row to `out` as it ends.

    Args:
        agent_factory: `"module:function"` returning an `Agent`, called once per worker (a
            callable works with `LocalEngine`); agents are never pickled.
        tasks: a JSON-lines file, or an iterable of dicts, of `{"id", "prompt", "deps"?,
            "output"?}`; bad lines are reported in the result and skipped.
        out: the results file (JSON lines `{"id", "run_id", "status", "output", "usage",
            "error"}`); tasks it already has rows for are skipped.
        store: the run log (a path or URL, or an open log with `LocalEngine`); None: the
            agent's own, if any. With a log, an unfinished run resumes from it.
        batch: the batch's name; each run's id is `"{batch}:{task id}"` (default: the stem of
            `out`).
        engine: where the runs happen (default `LocalEngine(concurrency=256)`).
        rate_limit: a cap on model calls for the whole batch, such as `"600/min"`.
        durability: "turn" or "batch" for every run (None: the agent's own).
        settings: request settings added to the agent's model on every worker (as
            `--set KEY=VALUE` does), e.g. `{"temperature": 0}`.

    Duplicate task ids, an agent factory that fails, a bad option, `out` naming the tasks
    file, and `out` being written by a batch still running (in another process: the results
    file is locked while a batch writes it) are a `ConfigError` before any task runs.
    """
    engine = engine if engine is not None else LocalEngine()
    rate = Rate.parse(rate_limit) if isinstance(rate_limit, str) else rate_limit
    if durability not in (None, "turn", "batch"):
        raise ConfigError(f'durability must be "turn" or "batch", got {durability!r}')
    name = batch if batch is not None else Path(out).stem
    if not name:
        raise ConfigError("a batch needs a name: pass batch=NAME")
    if isinstance(tasks, str | Path) and _same_file(tasks, out):
        raise ConfigError(
            f"the results file {out} is the tasks file: write the results to another file "
            "(such as results.jsonl); nothing was run"
        )
    todo, bad = read_tasks(tasks)
    results = ResultsFile(out, name)
    total = len(todo)
    todo = [task for task in todo if task.id not in results.done]
    job = Job(agent_factory, name, str(store) if isinstance(store, Path) else store,
              durability, rate, dict(settings) if settings else None)  # fmt: skip
    tally = Tally(name)
    try:
        if todo:
            with progress_bar(name, len(todo)) as on_row:
                tally.on_row = on_row

                def emit(row: Row) -> None:
                    results.append(row)
                    tally.add(row)

                engine.run(job, todo, emit)
    finally:
        results.close()
    return tally.report(results.path, total, total - len(todo), tuple(bad))


def _same_file(tasks: str | Path, out: str | Path) -> bool:
    """True when `out` names the tasks file (through another path, a link, ...)."""
    try:
        return os.path.samefile(tasks, out)
    except OSError:  # one of them does not exist (yet)
        return False
