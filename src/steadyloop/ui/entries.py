"""A run's transcript for the page: one JSON entry per logged event, in the order the events
happened (`reading.log_order`: a call approved on resume shows after the pause and the decision,
not above them).

Each entry has the `seq` and `at` of the event it shows and a `kind`: user, reply, tool, summary,
turn (a model call began), retry, compacted, limit, finished, resumed, or `event` for a kind of
event this viewer does not know (shown with its data, so nothing in the log is hidden).

The log has no row for a resume, but it leaves one of three traces: anything logged after a
pause (a `finished` row whose stop reason is "approval"); a model call logged again for a turn
that already began (without a compaction in between, which also repeats a turn); or tool results
logged as messages once the run has called the model. One process logs a result that way only
for a call cut off by the output limit, or waiting for approval as the run pauses (results of
calls it ran are in their `tool_finished` rows), while a resume answers that way the calls a
stop left open. A `resumed` entry goes before the first trace of each. A result message that
repeats its call's `tool_finished` row (a resume hands the model the results a pause held back)
is not shown twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from steadyloop.approvals import WAITING_TEXT
from steadyloop.media import attachment_text
from steadyloop.messages import (
    ArgumentsError,
    AssistantMessage,
    Summary,
    ToolCall,
    ToolResult,
    UserMessage,
    message_from_dict,
)
from steadyloop.store import LoggedEvent, ToolRecord, reading
from steadyloop.store.rows import EventKind

__all__ = ["arguments_text", "cost_of", "transcript"]

Entry = dict[str, Any]


def transcript(events: Sequence[LoggedEvent], history: int) -> list[Entry]:
    """The entries for a run's events (in sequence order); messages with an index below
    `history` were given to the run as earlier history and are marked so."""
    out: list[Entry] = []
    ran: dict[str, ToolResult] = {}  # results shown from `tool_finished` rows, by call id
    paused = False  # the latest event was a pause: whatever is logged next, a resume logged
    arguments: dict[str, str] = {}  # call id -> arguments, from the latest reply that made it
    cut_off: set[str] = set()  # calls of replies cut off by the output limit
    turn = 0  # the latest turn a model call began (0: none yet)
    compacted = False  # a compaction since that call began
    resumed = False  # a resume marked since that call began (once is enough)
    for event in reading.log_order(events):
        entry: Entry = {"seq": event.seq, "at": event.at}
        data = event.data
        if paused:
            out.append({**entry, "kind": "resumed"})
            resumed, paused = True, False
        if event.kind == "model_request":
            resumed = data["turn"] <= turn and not compacted
            if resumed:
                out.append({**entry, "kind": "resumed"})
            turn, compacted = data["turn"], False
            entry.update(
                kind="turn",
                turn=data["turn"],
                context_tokens=data["context_tokens"],
                max_context_tokens=data["max_context_tokens"],
            )
        elif event.kind == "tool_finished":
            record = ToolRecord.from_event(event)
            ran[record.call.id] = record.result
            entry.update(_tool(record.result, arguments_text(record.call)))
            entry.update(
                truncated=len(record.output) > len(record.result.content),
                output_length=len(record.output),
                duration=record.duration,
                attempts=record.attempts,
            )
        elif event.kind == "message":
            message = message_from_dict(data["message"])
            if isinstance(message, ToolResult) and turn and not _answered_here(message, cut_off):
                if not resumed:
                    out.append({**entry, "kind": "resumed"})
                resumed = True
            if isinstance(message, ToolResult) and ran.get(message.call_id) == message:
                continue  # shown as its call finished
            if isinstance(message, AssistantMessage):
                arguments.update((c.id, arguments_text(c)) for c in message.tool_calls)
                if message.stop_reason == "max_tokens":
                    cut_off.update(c.id for c in message.tool_calls)
            entry.update(_message(message, data["message"], arguments))
            entry["history"] = data["index"] < history
        elif event.kind == "compacted":
            compacted = True
            entry.update(
                kind="compacted",
                replaced=data["replaced"],
                tokens_before=data["tokens_before"],
                tokens_after=data["tokens_after"],
            )
        else:
            paused = event.kind == "finished" and data["stop_reason"] == "approval"
            entry.update(_other(event.kind, data))
        out.append(entry)
    return out


def _answered_here(result: ToolResult, cut_off: set[str]) -> bool:
    """True for a result message the run logs without a resume: the answer to a call cut off
    by the output limit, or a call's answer while it waits for approval (the run pauses)."""
    return result.call_id in cut_off or (result.is_error and result.content == WAITING_TEXT)


def _message(message: Any, raw: Mapping[str, Any], arguments: Mapping[str, str]) -> Entry:
    if isinstance(message, UserMessage):
        sent = [attachment_text(part) for part in message.parts if not isinstance(part, str)]
        return {"kind": "user", "text": message.text, "attachments": sent}
    if isinstance(message, AssistantMessage):
        usage = raw.get("usage") or {}
        return {
            "kind": "reply",
            "text": message.text,
            "reasoning": message.reasoning_text,  # shown collapsed, under the reply
            "calls": [{"id": c.id, "name": c.name} for c in message.tool_calls],
            "stop_reason": message.stop_reason,
            "input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"),
            "cost": cost_of(usage),
        }
    if isinstance(message, ToolResult):
        # Answered without a `tool_finished` row: not run (cut off, interrupted, or left
        # unanswered by an earlier history), or run by a process before a resume.
        return {**_tool(message, arguments.get(message.call_id, "")), "truncated": False}
    if isinstance(message, Summary):
        return {"kind": "summary", "text": message.text, "replaced": message.replaced}
    raise TypeError(f"no transcript entry for {type(message).__name__}")


def _tool(result: ToolResult, arguments: str) -> Entry:
    return {
        "kind": "tool",
        "name": result.name,
        "call_id": result.call_id,
        "arguments": arguments,
        "content": result.content,
        "is_error": result.is_error,
    }


def _other(kind: EventKind, data: Mapping[str, Any]) -> Entry:
    if kind == "model_retry":
        return {"kind": "retry", "attempt": data["attempt"], "error": data["error"],
                "wait": data["wait"]}  # fmt: skip
    if kind == "limit":
        return {"kind": "limit", "reason": data["reason"], "message": data["message"]}
    if kind == "finished":
        return {"kind": "finished", "stop_reason": data["stop_reason"]}
    return {"kind": "event", "name": kind, "data": dict(data)}


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as JSON for display; text that is not a JSON object as the model
    sent it."""
    try:
        return call.arguments_json()
    except ArgumentsError:
        return str(call.arguments)


def cost_of(usage: Mapping[str, Any]) -> float | None:
    """The cost in US dollars a usage record carries; None when the price is unknown."""
    cost = usage.get("cost_usd")
    return float(cost) if cost is not None else None
