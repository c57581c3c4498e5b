"""What both SQL stores share: the run-log rules over a few primitives each database provides.

A store subclasses `SqlStore` and provides `_read` (a query), `_import` (a run and its events in
one transaction), `claim`/`release` (liveness) and `close`; queries are written once with `?`
placeholders (`PARAM` rewrites them for drivers that want another style).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from steadyloop.errors import ConfigError, RunLogError
from steadyloop.events import Event
from steadyloop.messages import Message, Usage
from steadyloop.store import reading
from steadyloop.store.export import export_lines, read_export
from steadyloop.store.recording import RunRow, StatusRow, next_seqs, recorder
from steadyloop.store.rows import (
    EVENT_KINDS,
    LINK_COLUMNS,
    RUN_COLUMNS,
    EventKind,
    LoggedEvent,
    RunInfo,
    RunLinks,
    ToolRecord,
)
from steadyloop.store.writer import LogWriter

__all__ = ["SavedReport", "SqlStore", "schema", "tables"]


def schema(*, real: str) -> tuple[list[str], ...]:
    """The statements of each schema version, oldest first: entry N - 1 brings a log at version
    N - 1 to version N (the stores run them in order, and the current version is the number of
    entries). `real` is the database's name for a double-precision float."""
    return (
        tables(real=real),
        links(),
        eval_reports(real=real),
    )


def tables(*, real: str) -> list[str]:
    """The statements that make schema version 1: runs, and their events in order."""
    return [
        f"""CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            created {real} NOT NULL,
            updated {real} NOT NULL,
            model TEXT NOT NULL,
            prompt TEXT NOT NULL,
            history INTEGER NOT NULL,
            config TEXT NOT NULL,
            status TEXT NOT NULL,
            stop_reason TEXT,
            error TEXT,
            usage TEXT NOT NULL
        )""",
        f"""CREATE TABLE events (
            run_id TEXT NOT NULL REFERENCES runs(id),
            seq INTEGER NOT NULL,
            at {real} NOT NULL,
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
        "CREATE INDEX runs_by_created ON runs(created)",
    ]


def links() -> list[str]:
    """The statements that make schema version 2: how runs link to others (a session's turns,
    the run a run continued, a sub-agent's parent run and call), and the indexes that list a
    session's runs and a run's children in start order."""
    return [
        *(f"ALTER TABLE runs ADD COLUMN {column} TEXT" for column in LINK_COLUMNS),
        "CREATE INDEX runs_by_session ON runs(session, created)",
        "CREATE INDEX runs_by_parent ON runs(parent_run_id, created)",
    ]


def eval_reports(*, real: str) -> list[str]:
    """The statements that make schema version 3: each evaluation's report (`steadyloop.evals`)
    under its name, saved again by each run of the eval."""
    return [
        f"""CREATE TABLE evals (
            name TEXT PRIMARY KEY,
            created {real} NOT NULL,
            updated {real} NOT NULL,
            agent TEXT NOT NULL,
            report TEXT NOT NULL
        )""",
    ]


@dataclass(frozen=True, slots=True)
class SavedReport:
    """An evaluation's report as the log keeps it: `report` is `EvalReport.to_dict()`; `created`
    is when the eval first ran, `updated` when it last did (seconds since the epoch)."""

    name: str
    created: float
    updated: float
    agent: str
    report: dict[str, Any]


class SqlStore:
    """The `RunLog` rules, for a subclass that provides the database primitives."""

    location: str
    read_only: bool
    blocking_io = False
    _writer: LogWriter

    # -- primitives ----------------------------------------------------------------------------

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """Rows of a query; a failure is a `RunLogError` that names the log."""
        raise NotImplementedError

    def _import(self, run: Sequence[Any], events: Sequence[Sequence[Any]]) -> None:
        """Adds a run row and its event rows in one transaction; `ConfigError` if the id exists."""
        raise NotImplementedError

    def claim(self, run_id: str) -> None:
        raise NotImplementedError

    def release(self, run_id: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- writing -------------------------------------------------------------------------------

    def start_run(
        self,
        *,
        model: str,
        prompt: str,
        history: Sequence[Message],
        config: Mapping[str, Any],
        run_id: str | None = None,
        links: RunLinks | None = None,
    ) -> str:
        """Adds a run (its history as its first events, `links` in its row), claims it and
        returns its id. A `run_id` already in the log is a `ConfigError` (and nothing is
        written)."""
        self._refuse_if_read_only()
        given = run_id is not None
        run_id = run_id if run_id is not None else uuid.uuid4().hex
        if given and not run_id:
            raise ConfigError("a run id cannot be empty")
        self.claim(run_id)
        if given and self.find(run_id) is not None:
            self.release(run_id)
            raise ConfigError(
                f"run {run_id} is already in {self.location}: pass if_exists='resume' or "
                "'return' to go on from it or read it, or choose another id"
            )
        row = RunRow(run_id, time.time(), model, prompt, tuple(history), config, links)
        self._writer.submit(row)
        return run_id

    def recorder(
        self, run_id: str, next_seq: int | None = None, seen: Sequence[LoggedEvent] | None = None
    ) -> Callable[[Event], None]:
        """A callback that logs each event of run `run_id` as it happens.

        `next_seq` is the sequence number of its next event when the caller knows it (a run
        just started logs its history as events 0..n-1); otherwise it is read from the log,
        with the slots its last reply reserved for answers still missing. `seen`: the run's
        events to go on from instead of the log's (a DBOS workflow goes on from the events it
        read the first time it ran, see `engines.dbos`).
        """
        slots: dict[str, int] = {}
        if next_seq is None:
            next_seq, slots = next_seqs(self.events(run_id) if seen is None else seen)
        return recorder(run_id, next_seq, slots, self._writer.submit)

    async def commit(self, run_id: str) -> None:
        """Returns once every event recorded so far is committed, without blocking the event
        loop; raises `RunLogError` when a write of run `run_id` failed."""
        await self._writer.commit()
        failure = self._writer.failure(run_id)
        if isinstance(failure, RunLogError):  # the store's own word on it (a claim lost)
            raise RunLogError(str(failure), run_id) from failure
        if failure is not None:
            raise RunLogError(
                f"run {run_id} stopped: writing the run log {self.location} failed "
                f"({type(failure).__name__}: {failure}); fix the cause (free disk space, "
                f"restore the file or the connection), then `steadyloop resume {run_id}`",
                run_id,
            ) from failure

    def flush(self) -> None:
        """Returns once every event recorded so far is committed."""
        self._writer.flush()

    def mark(
        self, run_id: str, status: str, error: str | None = None, usage: Usage | None = None
    ) -> None:
        """Sets the run's status (running, error, interrupted) and, when given, its usage."""
        self._writer.submit(StatusRow(run_id, status, error, usage, time.time()))
        self._writer.flush()

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise ConfigError(f"the run log {self.location} was opened read-only")

    # -- reading -------------------------------------------------------------------------------

    def runs(self, limit: int = 20) -> list[RunInfo]:
        """The most recent runs, newest first."""
        self.flush()
        rows = self._read("SELECT * FROM runs ORDER BY created DESC LIMIT ?", (limit,))
        return [RunInfo.from_row(row) for row in rows]

    def find(self, run_id: str) -> RunInfo | None:
        """The run with exactly this id, or None."""
        self.flush()
        rows = self._read("SELECT * FROM runs WHERE id = ?", (run_id,))
        return RunInfo.from_row(rows[0]) if rows else None

    def run(self, run_id: str) -> RunInfo:
        """The run with exactly this id; `ConfigError` when there is none."""
        info = self.find(run_id)
        if info is None:
            raise ConfigError(f"no run {run_id!r} in {self.location}; `steadyloop logs` lists them")
        return info

    def session(self, name: str) -> list[RunInfo]:
        """The runs of session `name` in the order they started, oldest first ([] for a name
        with no runs)."""
        self.flush()
        rows = self._read("SELECT * FROM runs WHERE session = ? ORDER BY created, id", (name,))
        return [RunInfo.from_row(row) for row in rows]

    def latest(self, session: str) -> RunInfo | None:
        """The run of `session` that started last (None for a name with no runs): one row,
        however long the session."""
        self.flush()
        rows = self._read(
            "SELECT * FROM runs WHERE session = ? ORDER BY created DESC, id DESC LIMIT 1",
            (session,),
        )
        return RunInfo.from_row(rows[0]) if rows else None

    def children(self, run_id: str) -> list[RunInfo]:
        """The sub-agent runs run `run_id` started, in the order they started."""
        self.flush()
        rows = self._read(
            "SELECT * FROM runs WHERE parent_run_id = ? ORDER BY created, id", (run_id,)
        )
        return [RunInfo.from_row(row) for row in rows]

    def runs_with_prefix(self, prefix: str, limit: int = 2) -> list[RunInfo]:
        """Runs whose id starts with `prefix` (at most `limit`), for the command line."""
        self.flush()
        # Not LIKE: SQLite's ignores case, and the prefix may hold its wildcards (% and _).
        rows = self._read(
            "SELECT * FROM runs WHERE substr(id, 1, length(?)) = ? ORDER BY id LIMIT ?",
            (prefix, prefix, limit),
        )
        return [RunInfo.from_row(row) for row in rows]

    def events(self, run_id: str) -> list[LoggedEvent]:
        """Every logged event of the run, in order."""
        self.flush()
        rows = self._read(
            "SELECT seq, at, kind, data FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
        )
        return [LoggedEvent(seq, at, kind, json.loads(data)) for seq, at, kind, data in rows]

    def messages(self, run_id: str) -> tuple[Message, ...]:
        """The run's transcript as logged (see `reading.transcript`)."""
        return reading.transcript(self.events(run_id))

    def tool_records(self, run_id: str) -> dict[str, ToolRecord]:
        """The answered tool calls of the run, by call id (the last answer wins)."""
        return reading.tool_records(self.events(run_id))

    # -- evaluation reports --------------------------------------------------------------------

    def save_report(self, name: str, agent: str, report: Mapping[str, Any]) -> None:
        """Saves evaluation `name`'s report (its agent factory beside it), replacing the one saved
        before under that name (whose `created` time it keeps)."""
        self._refuse_if_read_only()
        now = time.time()
        # RETURNING makes the upsert a statement with rows, which `_read` runs on every store.
        self._read(
            "INSERT INTO evals VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
            "updated = excluded.updated, agent = excluded.agent, report = excluded.report "
            "RETURNING name",
            (name, now, now, agent, json.dumps(report)),
        )

    def saved_report(self, name: str) -> SavedReport | None:
        """Evaluation `name`'s saved report, or None."""
        rows = self._read("SELECT * FROM evals WHERE name = ?", (name,))
        return _saved(rows[0]) if rows else None

    def saved_reports(self, limit: int = 200) -> list[SavedReport]:
        """The saved evaluation reports, the most recently run first."""
        rows = self._read("SELECT * FROM evals ORDER BY updated DESC LIMIT ?", (limit,))
        return [_saved(row) for row in rows]

    def events_of(
        self, run_ids: Sequence[str], kinds: Sequence[EventKind] = EVENT_KINDS
    ) -> Iterator[tuple[str, list[LoggedEvent]]]:
        """The logged events of many runs (an eval's attempts) of the given `kinds`: each run
        that has any, with its events in order, a run at a time (its rows are decoded as it
        comes, so a caller that keeps only what it makes of them keeps few at once). One commit
        and a query per few hundred runs, not one each."""
        self.flush()
        loads = _json_reader()
        for start in range(0, len(run_ids), _RUNS_PER_READ):
            chunk = run_ids[start : start + _RUNS_PER_READ]
            rows = self._read(
                f"SELECT run_id, seq, at, kind, data FROM events WHERE run_id IN "
                f"({', '.join('?' * len(chunk))}) AND kind IN ({', '.join('?' * len(kinds))}) "
                "ORDER BY run_id, seq",
                [*chunk, *kinds],
            )
            for run_id, group in groupby(rows, itemgetter(0)):
                events = [
                    LoggedEvent(seq, at, kind, loads(data)) for _, seq, at, kind, data in group
                ]
                yield run_id, events

    # -- JSON lines ----------------------------------------------------------------------------

    def to_jsonl(self, run_id: str) -> Iterator[str]:
        """The run as JSON lines: the run row, each event, an end line; loss-free."""
        info = self.run(run_id)
        (row,) = self._read("SELECT * FROM runs WHERE id = ?", (info.id,))
        return export_lines(row, self.events(info.id))

    def from_jsonl(self, lines: Iterable[str]) -> str:
        """Adds a run exported with `to_jsonl`; returns its id. Importing the same export again
        changes nothing; a different run under an id already in the log is a `ConfigError`, and
        so is anything that is not a whole export (nothing is written)."""
        self._refuse_if_read_only()
        run, events = read_export(lines)
        values = [run[column] for column in RUN_COLUMNS]
        existing = self.find(str(run["id"]))
        if existing is not None:
            theirs = export_lines(values, _logged_events(events))
            if list(self.to_jsonl(existing.id)) == list(theirs):
                return existing.id
            raise ConfigError(
                f"run {run['id']} is already in {self.location} with other contents; "
                "it was not changed"
            )
        self._import(
            values,
            [(run["id"], e["seq"], e["at"], e["kind"], json.dumps(e["data"])) for e in events],
        )
        return str(run["id"])


def _logged_events(events: Sequence[Mapping[str, Any]]) -> list[LoggedEvent]:
    return [LoggedEvent(e["seq"], e["at"], e["kind"], e["data"]) for e in events]


# Runs whose events `events_of` reads with one query (well under every database's limit on
# a statement's parameters).
_RUNS_PER_READ = 500


def _json_reader() -> Callable[[str], Any]:
    """`json.loads` for the many rows an eval reads back, at less than half the cost: pydantic's
    parser (a dependency; loaded here, not with the store), which reads a JSON text to the same
    value. A text it refuses (a string with a lone surrogate, one that is not JSON) goes to
    `json.loads`, which reads the first and words the error of the other."""
    from pydantic_core import from_json

    def loads(text: str) -> Any:
        try:
            return from_json(text, cache_strings="keys")
        except ValueError:
            return json.loads(text)

    return loads


def _saved(row: Sequence[Any]) -> SavedReport:
    return SavedReport(row[0], row[1], row[2], row[3], json.loads(row[4]))
