"""`evaluate`: an agent over a dataset on the batch engine, each attempt scored from its logged run.

Attempt k (from 1) of case C runs as run `"NAME:C"` (k = 1) or `"NAME:C#k"`. The run log is the
eval's memory: an attempt whose run answered, stopped at a limit, failed or paused is read back
(no model call), an unfinished one (killed) goes on from the log, a missing one runs. So running
the same eval again is how it resumes, and a finished eval costs nothing to run again, judges
included. Scoring happens here, in the calling process, from each run as the log has it: the
same on Ray, and changed scorers or expected answers cost no model call of the agent.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from steadyloop.batch.local import LocalEngine
from steadyloop.batch.progress import progress_bar
from steadyloop.batch.ratelimit import Rate
from steadyloop.batch.report import Tally
from steadyloop.batch.results import Row
from steadyloop.batch.runner import Engine
from steadyloop.batch.tasks import Task
from steadyloop.batch.worker import Factory, Job, factory_spec
from steadyloop.errors import ConfigError
from steadyloop.evals.dataset import BadCase, Case, Dataset
from steadyloop.evals.judge import BENCH, Bench
from steadyloop.evals.report import Attempt, CaseResult, EvalReport
from steadyloop.evals.scorers import Score, Scorer, as_scorers, score_attempt
from steadyloop.messages import Message
from steadyloop.store import LoggedEvent, RunInfo, RunLog, open_store
from steadyloop.store.base import SqlStore
from steadyloop.store.reading import transcript
from steadyloop.store.rows import EventKind

__all__ = ["evaluate", "open_log", "reports_of"]

NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
# Attempts scored at a time (a judge's are model calls).
SCORING = 64
# The events an attempt is read from: its transcript, its answer and its limit.
READ: tuple[EventKind, ...] = ("message", "tool_finished", "finished", "limit")
# A score still to come: its attempt, the attempt's scores (in scorer order), its place there.
Waiting = tuple[Attempt, list[Any], int, Awaitable[Score]]
# What a done attempt's events tell: its answer (its last `finished` row's), the data of its last
# `limit` row (None: none) and its transcript.
Read = tuple[Any, Mapping[str, Any] | None, tuple[Message, ...]]
_UNREAD: Read = (None, None, ())
# A run the log holds in one of these is done: it is read back, never run again.
DONE = {"answered": "answered", "limit": "limit", "error": "error", "paused": "paused"}


def evaluate(
    agent_factory: Factory,
    dataset: str | Path | Dataset | Sequence[Case | Mapping[str, Any]],
    scorers: Sequence[Scorer | Callable[..., Any]] = (),
    *,
    name: str,
    store: RunLog | str | Path | None = None,
    engine: Engine | None = None,
    repeat: int = 1,
    rate_limit: str | Rate | None = None,
    durability: Literal["turn", "batch"] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> EvalReport:
    """Runs each case `repeat` times on the batch engine, scores every attempt, saves the report
    in the run log under `name` and returns it.

    Args:
        agent_factory: `"module:function"` returning an `Agent` (a callable works with
            `LocalEngine`).
        dataset: a JSON-lines file, a `Dataset`, or a list of `Case` and/or dicts.
        scorers: `Scorer` objects (built-ins, `Judge`) and functions `(case, attempt)`.
        name: the eval's name (letters, digits, `.`, `_`, `-`); its runs are `"NAME:CASE"`.
        store: the run log (a path or URL, or an open log with `LocalEngine`); None:
            `$STEADYLOOP_HOME/runs.db`, the command line's.
        engine: `LocalEngine()` (default) or `RayEngine(...)`.
        repeat: attempts per case (a whole number from 1).
        rate_limit, durability, settings: as for `run_batch`.

    Duplicate case ids, a failing factory, two scorers with one name, a bad option, another
    factory under an eval name already used and a case whose input differs from its logged run
    are a `ConfigError` before anything runs.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "evaluate() was called inside a running event loop: call it from a thread "
            "(await asyncio.to_thread(evaluate, ...))"
        )
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ConfigError(
            f"an eval's name is 1 to 100 letters, digits, '.', '_' or '-', got {name!r}"
        )
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ConfigError(f"repeat must be a whole number from 1, got {repeat!r}")
    if durability not in (None, "turn", "batch"):
        raise ConfigError(f'durability must be "turn" or "batch", got {durability!r}')
    rate = Rate.parse(rate_limit) if isinstance(rate_limit, str) else rate_limit
    engine = engine if engine is not None else LocalEngine()
    chosen = as_scorers(scorers)
    cases = _dataset(dataset)
    agent = factory_spec(agent_factory) or str(getattr(agent_factory, "__qualname__", "factory"))
    where = store if store is not None else _default_log()
    log, opened = open_log(where)
    try:
        saved = reports_of(log)
        eval_ = _Eval(name, agent, cases, repeat, saved)
        todo = eval_.plan()
        # One process shares the open log; other engines' workers open theirs from its location.
        shared = log if isinstance(engine, LocalEngine) or isinstance(where, RunLog) else str(where)
        job = Job(
            agent_factory, name, shared, durability, rate, dict(settings) if settings else None
        )
        rows = _run(engine, job, todo, name)
        report = eval_.report(rows, chosen, cases.bad)
        saved.save_report(name, agent, report.to_dict())
    finally:
        if opened:
            log.close()
    return report


def open_log(store: RunLog | str | Path | None, *, read_only: bool = False) -> tuple[RunLog, bool]:
    """The log `store` names (None: the command line's) and whether it was opened here."""
    if isinstance(store, RunLog):
        return store, False
    return open_store(store if store is not None else _default_log(), read_only=read_only), True


def _default_log() -> Path:
    """The command line's run log, `$STEADYLOOP_HOME/runs.db`."""
    from steadyloop.cli.setup import store_path

    return store_path()


def reports_of(store: RunLog) -> SqlStore:
    """`store` as a log that keeps eval reports (both SQL stores do)."""
    if not isinstance(store, SqlStore):
        raise ConfigError(
            f"the run log {store.location} keeps no eval reports: use a SQLite path or a "
            "postgresql:// URL"
        )
    return store


def _dataset(dataset: str | Path | Dataset | Sequence[Case | Mapping[str, Any]]) -> Dataset:
    if isinstance(dataset, Dataset):
        return dataset
    if isinstance(dataset, str | Path):
        return Dataset.from_jsonl(dataset)
    return Dataset(dataset)


class _Eval:
    """One eval's attempts: which to run, and their results read back from the log."""

    def __init__(self, name: str, agent: str, cases: Dataset, repeat: int, log: SqlStore) -> None:
        self.name = name
        self.agent = agent
        self.dataset = cases
        self.repeat = repeat
        self.log = log
        self.logged: dict[str, RunInfo] = {}
        # Whether `plan` left runs to run: `report` then reads the runs' rows again (they changed
        # since), else it goes on from the ones `plan` read.
        self.ran = True

    def run_id(self, case: Case, repeat: int) -> str:
        return f"{self.name}:{self._task_id(case, repeat)}"

    @staticmethod
    def _task_id(case: Case, repeat: int) -> str:
        return case.id if repeat == 1 else f"{case.id}#{repeat}"

    def plan(self) -> list[Task]:
        """The attempts to run (missing or unfinished); `ConfigError` when the log holds this
        eval with another agent, or a run whose prompt is not its case's input."""
        before = self.log.saved_report(self.name)
        if before is not None and before.agent != self.agent:
            raise ConfigError(
                f"eval {self.name} was run with the agent {before.agent}, not {self.agent}: "
                "give this eval another name"
            )
        self.logged = {info.id: info for info in self._logged()}
        todo = []
        for case in self.dataset.cases:
            for repeat in range(1, self.repeat + 1):
                info = self.logged.get(self.run_id(case, repeat))
                if info is not None and info.prompt != case.text:
                    raise ConfigError(
                        f"case {case.id} of eval {self.name} asks something else than its run "
                        f"{info.id} did: give this eval another name (nothing was run)"
                    )
                if info is not None and _logged_agent(info) not in (None, self.agent):
                    raise ConfigError(
                        f"eval {self.name} was run with the agent {_logged_agent(info)}, not "
                        f"{self.agent}: give this eval another name"
                    )
                if info is None or info.status not in DONE:
                    todo.append(Task(self._task_id(case, repeat), case.input))
        self.ran = bool(todo)
        return todo

    def _logged(self) -> list[RunInfo]:
        """Every run of this eval in the log (one query)."""
        return self.log.runs_with_prefix(f"{self.name}:", limit=2**62)

    def report(
        self, rows: Mapping[str, Row], scorers: list[Scorer], bad: Sequence[BadCase]
    ) -> EvalReport:
        """Reads each attempt back from the log, scores it and makes the report."""
        if self.ran:
            self.logged = {info.id: info for info in self._logged()}
        done = [run_id for run_id, info in self.logged.items() if info.status in DONE]
        # Each run's events as they come, kept only as what they tell (few are alive at once).
        read = {run_id: _read(events) for run_id, events in self.log.events_of(done, READ)}
        results: list[CaseResult] = []
        unfinished = 0
        for case in self.dataset.cases:
            attempts = []
            for repeat in range(1, self.repeat + 1):
                attempt = self._attempt(case, repeat, rows, read)
                if attempt is None:
                    unfinished += 1
                    continue
                attempts.append(attempt)
            results.append(
                CaseResult(case.id, case.input_json(), case.expected, case.metadata, attempts)
            )
        if scorers:
            self._score(zip(self.dataset.cases, results, strict=True), scorers)
        path = self.dataset.path
        return EvalReport(
            self.name, self.agent, str(path) if path is not None else None, self.repeat,
            [s.name for s in scorers], results, list(bad),
            unfinished,
        )  # fmt: skip

    def _attempt(
        self,
        case: Case,
        repeat: int,
        rows: Mapping[str, Row],
        read: Mapping[str, Read],
    ) -> Attempt | None:
        """The attempt as its run's log has it (`read`: what the events of the runs that are
        done tell; the engine's row for a run that never got logged); None when it has no result
        yet."""
        run_id = self.run_id(case, repeat)
        info = self.logged.get(run_id)
        if info is None or info.status not in DONE:
            row = rows.get(run_id)
            if row is None or row["status"] != "error" or info is not None:
                return None
            return Attempt(case.id, repeat, run_id, "error", error=row["error"])
        output, limit, messages = read.get(run_id, _UNREAD)
        error = info.error
        if info.status == "limit":
            error = limit["message"] if limit is not None else info.stop_reason
        elif info.status == "paused":
            error = "paused: waiting for approval"
        latency = info.updated - info.created if info.status in ("answered", "limit") else None
        return Attempt(
            case.id, repeat, run_id, DONE[info.status],
            output=output, error=error, usage=info.usage, latency=latency, messages=messages,
        )  # fmt: skip

    def _score(self, cases: Iterable[tuple[Case, CaseResult]], scorers: list[Scorer]) -> None:
        """Scores every attempt: sync scorers at once, async ones (judges) on an event loop,
        `SCORING` attempts at a time."""
        waiting: list[Waiting] = []
        for case, result in cases:
            for attempt in result.attempts:
                scores: list[Any] = [score_attempt(scorer, case, attempt) for scorer in scorers]
                later = [
                    (attempt, scores, i, s)
                    for i, s in enumerate(scores)
                    if not isinstance(s, Score)
                ]
                if later:
                    waiting += later
                else:
                    attempt.scores = {s.name: s for s in scores}
        if waiting:
            asyncio.run(self._await(waiting))

    async def _await(self, waiting: list[Waiting]) -> None:
        bench = Bench(self.log, self.name)
        BENCH.set(bench)
        slots = asyncio.Semaphore(SCORING)

        async def one(
            attempt: Attempt, scores: list[Any], index: int, score: Awaitable[Score]
        ) -> None:
            async with slots:
                scores[index] = await score
            if all(isinstance(s, Score) for s in scores):
                attempt.scores = {s.name: s for s in scores}

        try:
            await asyncio.gather(*(one(*item) for item in waiting))
        finally:
            await bench.close()


def _read(events: Sequence[LoggedEvent]) -> Read:
    """What an attempt's events tell (see `Read`)."""
    output = limit = None
    for event in events:
        if event.kind == "finished":
            output = event.data.get("output")
        elif event.kind == "limit":
            limit = event.data
    return output, limit, transcript(events)


def _logged_agent(info: RunInfo) -> str | None:
    metadata = info.config.get("metadata")
    found = metadata.get("agent_factory") if isinstance(metadata, Mapping) else None
    return found if isinstance(found, str) else None


def _run(engine: Engine, job: Job, todo: list[Task], name: str) -> dict[str, Row]:
    """Runs `todo` on `engine` with a progress bar; the rows by run id."""
    rows: dict[str, Row] = {}
    if not todo:
        return rows
    tally = Tally(name)
    with progress_bar(f"eval {name}", len(todo)) as on_row:
        tally.on_row = on_row

        def emit(row: Row) -> None:
            rows[row["run_id"]] = row
            tally.add(row)

        engine.run(job, todo, emit)
    return rows
