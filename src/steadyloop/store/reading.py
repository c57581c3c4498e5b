"""Reading a run back from its log: the transcript the model read, the order things happened
in, and the answered tool calls. The row format is `steadyloop.store.rows`."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence

from steadyloop.messages import AssistantMessage, Message, ToolCall, ToolResult, message_from_dict
from steadyloop.store.rows import EventKind, LoggedEvent, ToolRecord, finished_result

__all__ = ["log_order", "tool_records", "transcript"]


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
        kind = event.kind
        if kind == "tool_finished":
            call_id = event.data["call"]["id"]
            finished[call_id] = finished_result(event.data)
            logged.pop(call_id, None)  # the later answer is the one the model read
        elif kind == "message":
            message = message_from_dict(event.data["message"])
            if calls:  # a reply's calls may still be answered
                if isinstance(message, ToolResult) and any(c.id == message.call_id for c in calls):
                    logged[message.call_id] = message
                    continue
                close_batch()
            out.append(message)
            if isinstance(message, AssistantMessage):
                calls.extend(message.tool_calls)
    if calls:
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


_AFTER_CALLS: tuple[EventKind, ...] = (
    "model_request",
    "model_retry",
    "model_fallback",
    "compacted",
    "limit",
    "instructions",
    "finished",
)


def tool_records(events: Iterable[LoggedEvent]) -> dict[str, ToolRecord]:
    """The answered tool calls of a run, by call id (the last answer wins)."""
    records: dict[str, ToolRecord] = {}
    for event in events:
        if event.kind == "tool_finished":
            record = ToolRecord.from_event(event)
            records[record.call.id] = record
    return records
