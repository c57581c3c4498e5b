"""The run log: every run and everything that happened in it, appended to SQLite as it happens.

One row per run (model, prompt, status, totals) and one row per event: each transcript entry,
each model request (its turn and size; the view itself is derived from the entries), each
answered tool call with its arguments, timing, attempts and *untruncated* output, each
compaction, limit and error. Rows are only ever appended (the run row's status and totals are
the one thing updated). WAL mode with `synchronous=NORMAL`: every event is committed when it is
recorded, so a process killed at any point leaves a log a run can resume from.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from steadyloop.errors import ConfigError, RunLogError
from steadyloop.events import (
    CallDecided,
    Compacted,
    Event,
    InstructionsMade,
    LimitReached,
    MessageAdded,
    ModelRequestStarted,
    ModelRetry,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from steadyloop.logwriter import BUSY_SECONDS, LogWriter, Statements
from steadyloop.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    Usage,
    message_from_dict,
)
from steadyloop.output import as_json
from steadyloop.runlock import RunLocks

__all__ = ["LoggedEvent", "RunInfo", "RunStore", "ToolRecord"]

SCHEMA_VERSION = 1


def _migrate_1(db: sqlite3.Connection) -> None:
    """The first schema: runs, and their events in order."""
    statements = """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            model TEXT NOT NULL,
            prompt TEXT NOT NULL,
            history INTEGER NOT NULL,
            config TEXT NOT NULL,
            status TEXT NOT NULL,
            stop_reason TEXT,
            error TEXT,
            usage TEXT NOT NULL
        );
        CREATE TABLE events (
            run_id TEXT NOT NULL REFERENCES runs(id),
            seq INTEGER NOT NULL,
            at REAL NOT NULL,
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        );
        CREATE INDEX runs_by_created ON runs(created)
    """
    for statement in statements.split(";"):
        db.execute(statement)


# Schema version N is reached by running MIGRATIONS[N - 1] on version N - 1.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_migrate_1,)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run's row: `status` is running, answered, limit, error or interrupted."""

    id: str
    created: float
    updated: float
    model: str
    prompt: str
    history: int
    config: Mapping[str, Any]
    status: str
    stop_reason: str | None
    error: str | None
    usage: Usage


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One logged event: `kind` and its JSON `data`, `at` seconds since the epoch."""

    seq: int
    at: float
    kind: str
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """An answered tool call as logged: the full output and what the model read."""

    call: ToolCall
    result: ToolResult
    output: str
    duration: float
    attempts: int

    @classmethod
    def from_event(cls, event: LoggedEvent) -> ToolRecord:
        """The record in a `tool_finished` event."""
        data = event.data
        call = ToolCall.from_dict(data["call"])
        return cls(call, _result(data), data["output"], data["duration"], data["attempts"])


class RunStore:
    """An append-only run log in one SQLite file (created, with its folder, on first use).

    `read_only=True` opens an existing log for reading only (it never creates one and never
    writes, not even a checkpoint). `close()` commits what is queued, releases the file and
    folds the write-ahead log back into it; a store still open at interpreter exit is closed then.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path).expanduser()
        self.read_only = read_only
        self._unmade = False
        self._lock = threading.Lock()
        self._db = self._open_read_only() if read_only else self._open()
        self._writer = LogWriter(self._db, self._lock)
        self._locks = RunLocks(self.path)
        self._closer = weakref.finalize(self, _close, self._writer, self._locks, self._db)

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_SECONDS
            )
        except (sqlite3.Error, OSError) as exc:
            raise self._cannot_open(exc) from exc
        try:
            # Refuse a log from a newer version before anything (even WAL mode) touches it.
            self._check_version(db)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            _migrate(db)
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):
                raise self._cannot_open(exc) from exc
            raise
        return db

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise ConfigError(f"no run log at {self.path} yet: no run has been logged there")
        uri = self.path.resolve().as_uri()
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        try:
            self._check_version(db)
        except sqlite3.OperationalError:
            # A WAL log in a folder we cannot write lacks the shared-memory file a reader needs;
            # nobody can be writing there, so the file is read as it stands.
            db.close()
            db = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
            try:
                self._check_version(db)
            except sqlite3.Error as exc:
                db.close()
                raise self._cannot_open(exc) from exc
        except sqlite3.Error as exc:
            db.close()
            raise self._cannot_open(exc) from exc
        return db

    def _check_version(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        # A log whose creator died before making its tables holds no runs; only a writer can
        # bring an older schema up to date.
        self._unmade = version == 0
        if 0 < version < SCHEMA_VERSION and self.read_only:
            db.close()
            raise ConfigError(
                f"the run log {self.path} has an older schema (version {version}); run any "
                "command that writes to it (such as `steadyloop run`) once to upgrade it"
            )
        if version > SCHEMA_VERSION:
            db.close()
            raise ConfigError(
                f"the run log {self.path} has schema version {version}, newer than this "
                f"steadyloop understands ({SCHEMA_VERSION}); upgrade steadyloop to read it"
            )

    def _cannot_open(self, exc: BaseException) -> ConfigError:
        return ConfigError(
            f"cannot open the run log {self.path}: {exc}; move the file aside or point "
            "STEADYLOOP_HOME elsewhere"
        )

    def close(self) -> None:
        """Commits what is queued, drops this store's run locks and closes the file."""
        self._closer()

    def flush(self) -> None:
        """Returns once every event recorded so far is committed."""
        self._writer.flush()

    async def commit(self, run_id: str) -> None:
        """Returns once every event recorded so far is committed, without blocking the event
        loop; raises `RunLogError` when a write of run `run_id` failed."""
        await self._writer.commit()
        self._raise_failure(run_id)

    # -- live runs ---------------------------------------------------------------------------

    def claim(self, run_id: str) -> None:
        """Marks run `run_id` live in this process; `ConfigError` when it is live elsewhere."""
        try:
            claimed = self._locks.claim(run_id)
        except OSError as exc:
            raise RunLogError(
                f"cannot lock run {run_id} in {self._locks.path}: {exc}", run_id
            ) from exc
        if not claimed:
            raise ConfigError(
                f"run {run_id} is still running (in this or another process); wait for it to "
                "finish or stop it, then resume it"
            )

    def release(self, run_id: str) -> None:
        """Ends run `run_id`'s claim: it is no longer live here."""
        self._locks.release(run_id)
        self._writer.forget(run_id)

    # -- writing -----------------------------------------------------------------------------

    def start_run(
        self,
        *,
        model: str,
        prompt: str,
        history: Sequence[Message],
        config: Mapping[str, Any],
        run_id: str | None = None,
    ) -> str:
        """Adds a run (logging its history as its first entries), claims it and returns its id."""
        self._refuse_if_read_only()
        run_id = run_id or uuid.uuid4().hex
        self.claim(run_id)
        now = time.time()
        row = (
            run_id, now, now, model, prompt, len(history), json.dumps(dict(config)),
            json.dumps(Usage().to_dict()),
        )  # fmt: skip
        history = tuple(history)

        def write(db: Statements) -> None:
            db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, 'running', NULL, NULL, ?)", row
            )
            for index, message in enumerate(history):
                _insert(db, run_id, index, now, "message", {"index": index, **_msg(message)})

        self._writer.submit(write, run_id)
        return run_id

    def recorder(self, run_id: str, next_seq: int | None = None) -> Callable[[Event], None]:
        """A callback that logs each event of run `run_id` as it happens.

        `next_seq` is the sequence number of its next event when the caller knows it (a run
        just started logs its history as events 0..n-1); otherwise it is read from the log.
        """
        if next_seq is None:
            self.flush()
            next_seq = self._next_seq(run_id)
        submit = self._writer.submit
        # Calls whose `tool_finished` row already holds their result: the result's own
        # message row would repeat it (the transcript is rebuilt from both, see `messages`).
        finished: set[str] = set()

        def record(event: Event) -> None:
            nonlocal next_seq
            if isinstance(event, _NOT_LOGGED):
                return
            if isinstance(event, ToolCallFinished):
                # A call cut short by a stop is left unanswered in the log: its outcome is
                # unknown, and `resume` runs it again (idempotent) or says so.
                finished.add(event.call.id)
                if event.cancelled:
                    return
            elif (
                isinstance(event, MessageAdded)
                and isinstance(event.message, ToolResult)
                and event.message.call_id in finished
            ):
                finished.discard(event.message.call_id)
                return
            seq, at = next_seq, time.time()
            next_seq += 1

            def write(db: Statements) -> None:
                kind, data = _row(event)
                _insert(db, run_id, seq, at, kind, data)
                if isinstance(event, RunFinished):
                    _update(db, run_id, event.result.stop_reason, event.result.usage)

            submit(write, run_id)

        return record

    def mark(
        self, run_id: str, status: str, error: str | None = None, usage: Usage | None = None
    ) -> None:
        """Sets the run's status (running, error, interrupted) and, when given, its usage."""
        values = (
            status, error, time.time(), json.dumps(usage.to_dict()) if usage else None, run_id,
        )  # fmt: skip

        def write(db: Statements) -> None:
            db.execute(
                "UPDATE runs SET status = ?, error = ?, updated = ?, "
                "usage = COALESCE(?, usage) WHERE id = ?",
                values,
            )

        self._writer.submit(write, run_id, event=False)
        self._writer.flush()

    def _raise_failure(self, run_id: str) -> None:
        failure = self._writer.failure(run_id)
        if failure is not None:
            raise RunLogError(
                f"run {run_id} stopped: writing the run log {self.path} failed "
                f"({type(failure).__name__}: {failure}); fix the cause (free disk space, "
                f"restore the file), then `steadyloop resume {run_id}`",
                run_id,
            ) from failure

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise ConfigError(f"the run log {self.path} was opened read-only")

    def _next_seq(self, run_id: str) -> int:
        row = self._read("SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE run_id = ?", (run_id,))
        return int(row[0][0])

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """Rows of a query; a failure is a `RunLogError` that names the file."""
        if self.read_only and self._unmade:
            return []
        with self._lock:
            try:
                return self._db.execute(sql, parameters).fetchall()
            except sqlite3.Error as exc:
                raise RunLogError(
                    f"reading the run log {self.path} failed: {exc}; if the file is damaged, "
                    "move it aside (its runs can be exported from a copy)"
                ) from exc

    # -- reading -----------------------------------------------------------------------------

    def runs(self, limit: int = 20) -> list[RunInfo]:
        """The most recent runs, newest first."""
        self.flush()
        rows = self._read("SELECT * FROM runs ORDER BY created DESC LIMIT ?", (limit,))
        return [_run_info(row) for row in rows]

    def run(self, run_id: str) -> RunInfo:
        """The run with this id, or the only one whose id starts with it (like git)."""
        self.flush()
        rows = self._read(
            "SELECT * FROM runs WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 3",
            (run_id, run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"),
        )
        exact = [r for r in rows if r[0] == run_id]
        if exact:
            return _run_info(exact[0])
        if not rows or not run_id:
            raise ConfigError(f"no run {run_id!r} in {self.path}; `steadyloop logs` lists them")
        if len(rows) > 1:
            raise ConfigError(f"run id {run_id!r} is ambiguous in {self.path}: give more of it")
        return _run_info(rows[0])

    def events(self, run_id: str) -> list[LoggedEvent]:
        """Every logged event of the run, in order."""
        self.flush()
        rows = self._read(
            "SELECT seq, at, kind, data FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
        )
        return [LoggedEvent(seq, at, kind, json.loads(data)) for seq, at, kind, data in rows]

    def messages(self, run_id: str) -> tuple[Message, ...]:
        """The run's transcript as logged: history, then everything the run appended.

        A reply's results are in the transcript once every one of its calls has an answer in
        the log (from its `tool_finished` row or its own message row), in call order, as the
        loop appends them; a batch cut short by a crash is left unanswered for `resume`.
        """
        out: list[Message] = []
        finished: dict[str, ToolResult] = {}
        calls: list[ToolCall] = []  # the latest reply's calls, while their results may follow
        logged: dict[str, ToolResult] = {}  # results of those calls with a message row

        def close_batch() -> None:
            answers = [logged.get(c.id) or finished.get(c.id) for c in calls]
            if all(answers):
                out.extend(a for a in answers if a is not None)
            else:
                out.extend(logged[c.id] for c in calls if c.id in logged)
            calls.clear()
            logged.clear()

        for event in self.events(run_id):
            if event.kind == "tool_finished":
                finished[event.data["call"]["id"]] = _result(event.data)
            elif event.kind == "message":
                message = message_from_dict(event.data["message"])
                if isinstance(message, ToolResult) and any(c.id == message.call_id for c in calls):
                    logged[message.call_id] = message
                    continue
                close_batch()
                out.append(message)
                if isinstance(message, AssistantMessage):
                    calls.extend(message.tool_calls)
        close_batch()
        return tuple(out)

    def tool_records(self, run_id: str) -> dict[str, ToolRecord]:
        """The answered tool calls of the run, by call id (the last answer wins)."""
        records: dict[str, ToolRecord] = {}
        for event in self.events(run_id):
            if event.kind == "tool_finished":
                record = ToolRecord.from_event(event)
                records[record.call.id] = record
        return records

    # -- JSONL -------------------------------------------------------------------------------

    def to_jsonl(self, run_id: str) -> Iterator[str]:
        """The run as JSON lines: the run row first, then each event, then an end line that
        counts the events (so an export cut short is recognised); loss-free."""
        info = self.run(run_id)
        (row,) = self._read("SELECT * FROM runs WHERE id = ?", (info.id,))
        yield json.dumps({"type": "run", **dict(zip(RUN_COLUMNS, row, strict=True))})
        events = self.events(info.id)
        for event in events:
            yield json.dumps(
                {"type": "event", "seq": event.seq, "at": event.at, "kind": event.kind,
                 "data": event.data}
            )  # fmt: skip
        yield json.dumps({"type": "end", "events": len(events)})

    def from_jsonl(self, lines: Iterable[str]) -> str:
        """Adds a run exported with `to_jsonl`; returns its id. Refuses to overwrite a run,
        and refuses (`ConfigError`, nothing written) anything that is not a whole export."""
        self._refuse_if_read_only()
        run, events = read_export(lines)
        self.flush()
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(
                    "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    tuple(run[column] for column in RUN_COLUMNS),
                )
                for event in events:
                    _insert(
                        self._db, run["id"], event["seq"], event["at"], event["kind"], event["data"]
                    )
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.IntegrityError):
                    raise ConfigError(f"run {run['id']} is already in {self.path}") from exc
                raise RunLogError(f"importing into the run log {self.path} failed: {exc}") from exc
        return str(run["id"])


RUN_COLUMNS = (
    "id", "created", "updated", "model", "prompt", "history", "config", "status", "stop_reason",
    "error", "usage",
)  # fmt: skip


def read_export(lines: Iterable[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run row and events of a whole export; `ConfigError` naming the first thing wrong."""
    parsed: list[Any] = []
    number = 0
    try:
        for line in lines:
            number += 1
            if line.strip():
                parsed.append(json.loads(line))
    except UnicodeDecodeError:
        raise ConfigError("not a steadyloop run export: the file is not UTF-8 text") from None
    except ValueError:
        raise ConfigError(f"not a steadyloop run export: line {number} is not JSON") from None
    if not parsed or not isinstance(parsed[0], dict) or parsed[0].get("type") != "run":
        raise ConfigError(
            "not a steadyloop run export: the first line must be the run (from `steadyloop export`)"
        )
    run, *events, end = parsed if len(parsed) > 1 else (*parsed, None)
    if not isinstance(end, dict) or end.get("type") != "end" or end.get("events") != len(events):
        raise ConfigError(
            "the run export is cut short (its end line is missing or does not match): "
            "export the run again"
        )
    missing = [column for column in RUN_COLUMNS if column not in run]
    if missing:
        raise ConfigError(f"not a steadyloop run export: the run line lacks {', '.join(missing)}")
    for number, event in enumerate(events, 2):
        if (
            not isinstance(event, dict)
            or event.get("type") != "event"
            or not {"seq", "at", "kind", "data"} <= event.keys()
        ):
            raise ConfigError(f"not a steadyloop run export: line {number} is not an event")
    return run, events


def _migrate(db: sqlite3.Connection) -> None:
    """Brings the schema up to date inside one write transaction, so two processes opening a
    new log at once cannot both migrate it."""
    if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        for number in range(version + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[number - 1](db)
            db.execute(f"PRAGMA user_version={number}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _close(writer: LogWriter, locks: RunLocks, db: sqlite3.Connection) -> None:
    writer.close()
    locks.close()
    with contextlib.suppress(sqlite3.Error):
        db.close()


def _msg(message: Message) -> dict[str, Any]:
    return {"message": message.to_dict()}


# Events not worth a row: deltas are chatty and rebuilt from the reply; a call's start is
# implied by the reply that made it and its finish (which carries its duration).
_NOT_LOGGED = (RunStarted, TextDelta, ToolCallDelta, ToolCallStarted)


def _insert(
    db: sqlite3.Connection | Statements,
    run_id: str,
    seq: int,
    at: float,
    kind: str,
    data: Mapping[str, Any],
) -> None:
    db.execute(
        "INSERT INTO events VALUES (?, ?, ?, ?, ?)", (run_id, seq, at, kind, json.dumps(data))
    )


def _update(db: Statements, run_id: str, stop_reason: str, usage: Usage) -> None:
    status = "answered" if stop_reason in ("end_turn", "max_tokens") else "limit"
    db.execute(
        "UPDATE runs SET status = ?, stop_reason = ?, usage = ?, updated = ? WHERE id = ?",
        (status, stop_reason, json.dumps(usage.to_dict()), time.time(), run_id),
    )


def _row(event: Event) -> tuple[str, Mapping[str, Any]]:
    """The (kind, data) logged for an event."""
    if isinstance(event, MessageAdded):
        return "message", {"index": event.index, **_msg(event.message)}
    if isinstance(event, ToolCallFinished):
        result = event.result.to_dict()
        if result["content"] == event.output:
            del result["content"]  # not truncated: the output is what the model read
        return "tool_finished", {
            "call": event.call.to_dict(),
            "result": result,
            "output": event.output,
            "duration": event.duration,
            "attempts": event.attempts,
        }
    if isinstance(event, ModelRequestStarted):
        return "model_request", {
            "turn": event.turn,
            "context_tokens": event.context_tokens,
            "max_context_tokens": event.max_context_tokens,
            "view_length": event.view_length,
        }
    if isinstance(event, ModelRetry):
        return "model_retry", {
            "turn": event.turn,
            "attempt": event.attempt,
            "error": event.error,
            "wait": event.wait,
        }
    if isinstance(event, Compacted):
        return "compacted", {
            "replaced": event.summary.replaced,
            "tokens_before": event.tokens_before,
            "tokens_after": event.tokens_after,
        }
    if isinstance(event, LimitReached):
        return "limit", {"reason": event.reason, "message": event.message}
    if isinstance(event, InstructionsMade):
        return "instructions", {"text": event.text}
    if isinstance(event, CallDecided):
        decision: dict[str, Any] = {
            "call": event.call.to_dict(),
            "decision": event.decision,
            "arguments": dict(event.arguments),
        }
        if event.reason:
            decision["reason"] = event.reason
        if event.edited is not None:
            decision["edited"] = dict(event.edited)
        return "decision", decision
    if isinstance(event, RunFinished):
        return "finished", {
            "stop_reason": event.result.stop_reason,
            "output": as_json(event.result.output),
            "usage": event.result.usage.to_dict(),
        }
    raise TypeError(f"no log row for {type(event).__name__}")


def _result(data: Mapping[str, Any]) -> ToolResult:
    """The result a `tool_finished` row records (its content is the output unless truncated)."""
    result = message_from_dict({"content": data["output"], **data["result"]})
    assert isinstance(result, ToolResult)
    return result


def _run_info(row: Sequence[Any]) -> RunInfo:
    return RunInfo(
        id=row[0],
        created=row[1],
        updated=row[2],
        model=row[3],
        prompt=row[4],
        history=row[5],
        config=json.loads(row[6]),
        status=row[7],
        stop_reason=row[8],
        error=row[9],
        usage=Usage.from_dict(json.loads(row[10])),
    )
