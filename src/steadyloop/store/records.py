"""What the run log holds, whatever the database: runs, events, and how they read back.

Every store keeps one row per run (`RunInfo`) and one row per event (`LoggedEvent`: a sequence
number, a time, a kind and JSON data). This module turns the loop's events into rows, rows back
into a transcript, and runs into the JSON-lines export; the stores only move rows.

Sequence numbers are deterministic: a reply that asks for N calls takes the next number and
reserves the N after it for the calls' answers, in call order, so where a result lands never
depends on which call finished first. Writing a row whose (run, number) is taken is a no-op in
every store, so a step replayed or retried cannot corrupt a log.
"""

from __future__ import annotations

import bisect
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from steadyloop.errors import ConfigError
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
from steadyloop.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    Usage,
    message_from_dict,
)
from steadyloop.output import as_json

__all__ = [
    "RUN_COLUMNS",
    "EventRow",
    "FinishRow",
    "LoggedEvent",
    "RunInfo",
    "RunRow",
    "StatusRow",
    "ToolRecord",
    "export_lines",
    "log_order",
    "next_seqs",
    "read_export",
    "recorder",
    "tool_records",
    "transcript",
]

RUN_COLUMNS = (
    "id", "created", "updated", "model", "prompt", "history", "config", "status", "stop_reason",
    "error", "usage",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run's row: `status` is running, answered, limit, paused (for approval), error or
    interrupted."""

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

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> RunInfo:
        """A run from its row, columns in `RUN_COLUMNS` order."""
        return cls(
            id=row[0], created=row[1], updated=row[2], model=row[3], prompt=row[4],
            history=row[5], config=json.loads(row[6]), status=row[7], stop_reason=row[8],
            error=row[9], usage=Usage.from_dict(json.loads(row[10])),
        )  # fmt: skip

    @property
    def finished(self) -> bool:
        """True when the run ended by answering or at a limit (nothing is left to resume)."""
        return self.status in ("answered", "limit")


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


# -- rows a store writes -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunRow:
    """A new run and the history it starts from (logged as its first events)."""

    run_id: str
    at: float
    model: str
    prompt: str
    history: tuple[Message, ...]
    config: Mapping[str, Any]

    def values(self) -> tuple[Any, ...]:
        """The run's row, in `RUN_COLUMNS` order."""
        return (
            self.run_id, self.at, self.at, self.model, self.prompt, len(self.history),
            json.dumps(dict(self.config)), "running", None, None, json.dumps(Usage().to_dict()),
        )  # fmt: skip

    def events(self) -> list[tuple[Any, ...]]:
        """The history's event rows: seq 0..n-1."""
        return [
            (self.run_id, index, self.at, "message",
             json.dumps({"index": index, "message": message.to_dict()}))
            for index, message in enumerate(self.history)
        ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class EventRow:
    """One event of a run at its sequence number; serialised only when written."""

    run_id: str
    seq: int
    at: float
    event: Event

    def values(self) -> tuple[Any, ...]:
        kind, data = _row(self.event)
        return (self.run_id, self.seq, self.at, kind, json.dumps(data))


@dataclass(frozen=True, slots=True)
class FinishRow:
    """The run ended by answering or at a limit: its status, stop reason and usage."""

    run_id: str
    stop_reason: str
    usage: Usage
    at: float

    def values(self) -> tuple[Any, ...]:
        """(status, stop_reason, usage, updated, id)."""
        status = "answered" if self.stop_reason in ("end_turn", "max_tokens") else "limit"
        return (status, self.stop_reason, json.dumps(self.usage.to_dict()), self.at, self.run_id)


@dataclass(frozen=True, slots=True)
class StatusRow:
    """The run's status changed (running, error, interrupted); usage when known."""

    run_id: str
    status: str
    error: str | None
    usage: Usage | None
    at: float

    def values(self) -> tuple[Any, ...]:
        """(status, error, updated, usage or None, id)."""
        usage = json.dumps(self.usage.to_dict()) if self.usage is not None else None
        return (self.status, self.error, self.at, usage, self.run_id)


Row = RunRow | EventRow | FinishRow | StatusRow


# -- recording ---------------------------------------------------------------------------------

# Events not worth a row: deltas are chatty and rebuilt from the reply; a call's start is
# implied by the reply that made it and its finish (which carries its duration).
_NOT_LOGGED = (RunStarted, TextDelta, ToolCallDelta, ToolCallStarted)


def recorder(
    run_id: str,
    next_seq: int,
    slots: Mapping[str, int],
    submit: Callable[[Row], None],
) -> Callable[[Event], None]:
    """A callback that turns each event of run `run_id` into the row `submit` writes.

    `next_seq` is the number of the next event; `slots` the numbers reserved for the answers of
    calls still open (a resumed run's last reply), by call id.
    """
    reserved = dict(slots)
    # Results a `tool_finished` row holds: the same result's own message row would repeat it
    # (the transcript is rebuilt from both, see `transcript`). A result the loop changed before
    # the model read it (the repeat guard's) differs, and is logged as what the model read.
    finished: dict[str, ToolResult] = {}

    def record(event: Event) -> None:
        nonlocal next_seq
        if isinstance(event, _NOT_LOGGED):
            return
        seq: int | None = None
        if isinstance(event, ToolCallFinished):
            finished[event.call.id] = event.result
            if event.cancelled:
                # Cut short by a stop: its outcome is unknown, and `resume` runs it again
                # (idempotent) or says so. Its slot stays free for that answer.
                return
            seq = reserved.pop(event.call.id, None)
        elif isinstance(event, MessageAdded) and isinstance(event.message, ToolResult):
            if finished.pop(event.message.call_id, None) == event.message:
                return
            seq = reserved.pop(event.message.call_id, None)
        if seq is None:
            seq = next_seq
            next_seq += 1
        if isinstance(event, MessageAdded) and isinstance(event.message, AssistantMessage):
            for call in event.message.tool_calls:
                reserved[call.id] = next_seq
                next_seq += 1
        at = time.time()
        submit(EventRow(run_id, seq, at, event))
        if isinstance(event, RunFinished):
            submit(FinishRow(run_id, event.result.stop_reason, event.result.usage, at))

    return record


def next_seqs(events: Sequence[LoggedEvent]) -> tuple[int, dict[str, int]]:
    """Where a logged run goes on: its next sequence number and the slots still reserved for
    the answers of its last reply's calls."""
    next_seq = events[-1].seq + 1 if events else 0
    slots: dict[str, int] = {}
    for event in reversed(events):
        if event.kind == "message" and event.data["message"].get("type") == "assistant":
            reply = message_from_dict(event.data["message"])
            assert isinstance(reply, AssistantMessage)
            taken = {e.seq for e in events if e.seq > event.seq}
            for index, call in enumerate(reply.tool_calls):
                seq = event.seq + 1 + index
                if seq not in taken:
                    slots[call.id] = seq
            next_seq = max(next_seq, event.seq + 1 + len(reply.tool_calls))
            break
    return next_seq, slots


# -- reading -----------------------------------------------------------------------------------


def transcript(events: Iterable[LoggedEvent]) -> tuple[Message, ...]:
    """A run's transcript from its events: history, then everything the run appended.

    A reply's results are in the transcript once every one of its calls has an answer in the
    log (from its `tool_finished` row or its own message row; the later one when a call has
    both, since that is what the model read), in call order, as the loop appends them; a batch
    cut short by a crash is left unanswered for `resume`.
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

    for event in events:
        if event.kind == "tool_finished":
            call_id = event.data["call"]["id"]
            finished[call_id] = _result(event.data)
            logged.pop(call_id, None)  # the later answer is the one the model read
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


def log_order(events: Sequence[LoggedEvent]) -> list[LoggedEvent]:
    """A run's events (in sequence order) in the order they happened, for reading the log.

    That is sequence order, except for an answer written into a slot that was reserved before
    the run stopped (a call approved when a paused run was resumed, or run again after a kill):
    it goes where it was logged, before the first later event logged after it, instead of above
    the pause. It is told by its time: it was logged after an event with a higher number that
    only comes once a reply's calls are all answered (a model request, a stop, a reply...);
    decisions and the other answers of the same reply may be logged in any order.
    """
    count = len(events)
    # The earliest time among such events from each position on.
    earliest = [float("inf")] * (count + 1)
    for index in range(count - 1, -1, -1):
        at = events[index].at if _after_calls(events[index]) else float("inf")
        earliest[index] = min(earliest[index + 1], at)
    late = [index for index in range(count) if events[index].at > earliest[index + 1]]
    if not late:
        return list(events)
    moved = set(late)
    on_time = [event for index, event in enumerate(events) if index not in moved]
    seqs = [event.seq for event in on_time]
    before: dict[int, list[LoggedEvent]] = defaultdict(list)
    for index in late:
        event = events[index]
        place = bisect.bisect_right(seqs, event.seq)
        while place < len(on_time) and on_time[place].at <= event.at:
            place += 1
        before[place].append(event)
    out: list[LoggedEvent] = []
    for place, event in enumerate(on_time):
        out.extend(before.get(place, ()))
        out.append(event)
    out.extend(before.get(len(on_time), ()))
    return out


def _after_calls(event: LoggedEvent) -> bool:
    """True for an event logged only once the calls of the reply before it were answered."""
    if event.kind == "message":
        return bool(event.data["message"].get("type") != "tool_result")
    return event.kind in _AFTER_CALLS


_AFTER_CALLS = ("model_request", "model_retry", "compacted", "limit", "instructions", "finished")


def tool_records(events: Iterable[LoggedEvent]) -> dict[str, ToolRecord]:
    """The answered tool calls of a run, by call id (the last answer wins)."""
    records: dict[str, ToolRecord] = {}
    for event in events:
        if event.kind == "tool_finished":
            record = ToolRecord.from_event(event)
            records[record.call.id] = record
    return records


# -- JSON lines --------------------------------------------------------------------------------


def export_lines(run: Sequence[Any], events: Sequence[LoggedEvent]) -> Iterator[str]:
    """A run as JSON lines: its row, each event, then an end line that counts the events (so an
    export cut short is recognised); loss-free."""
    yield json.dumps({"type": "run", **dict(zip(RUN_COLUMNS, run, strict=True))})
    for event in events:
        yield json.dumps(
            {"type": "event", "seq": event.seq, "at": event.at, "kind": event.kind,
             "data": event.data}
        )  # fmt: skip
    yield json.dumps({"type": "end", "events": len(events)})


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


# -- event data --------------------------------------------------------------------------------


def _row(event: Event) -> tuple[str, Mapping[str, Any]]:
    """The (kind, data) logged for an event."""
    if isinstance(event, MessageAdded):
        return "message", {"index": event.index, "message": event.message.to_dict()}
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
