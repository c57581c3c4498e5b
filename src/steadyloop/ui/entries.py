"""A run's transcript for the page: one JSON entry per logged event, in log order.

Each entry has the `seq` and `at` of the event it shows and a `kind`: user, reply, tool, summary,
turn (a model call began), retry, compacted, limit, finished, resumed, or `event` for a kind of
event this viewer does not know (shown with its data, so nothing in the log is hidden).

The log has no row for a resume, but it leaves one of two traces. Either a model call is logged
again for a turn that already began (without a compaction in between, which also repeats a
turn); or tool results are logged as messages once the run has called the model, which one
process does only for calls cut off by the output limit (results of calls it ran are in their
`tool_finished` rows), while a resume answers that way the calls a stop left open. A `resumed`
entry goes before the first trace of each.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from steadyloop.messages import (
    AssistantMessage,
    Summary,
    ToolCall,
    ToolResult,
    UserMessage,
    message_from_dict,
)
from steadyloop.store import LoggedEvent, ToolRecord

__all__ = ["arguments_text", "cost_of", "transcript"]

Entry = dict[str, Any]


def transcript(events: Iterable[LoggedEvent], history: int) -> list[Entry]:
    """The entries for a run's events; messages with an index below `history` were given to
    the run as earlier history and are marked so."""
    out: list[Entry] = []
    arguments: dict[str, str] = {}  # call id -> arguments, from the latest reply that made it
    cut_off: set[str] = set()  # calls of replies cut off by the output limit
    turn = 0  # the latest turn a model call began (0: none yet)
    compacted = False  # a compaction since that call began
    resumed = False  # a resume marked since that call began (once is enough)
    for event in events:
        entry: Entry = {"seq": event.seq, "at": event.at}
        data = event.data
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
            entry.update(_tool(record.result, arguments_text(record.call)))
            entry.update(
                truncated=len(record.output) > len(record.result.content),
                output_length=len(record.output),
                duration=record.duration,
                attempts=record.attempts,
            )
        elif event.kind == "message":
            message = message_from_dict(data["message"])
            if isinstance(message, ToolResult) and turn and message.call_id not in cut_off:
                if not resumed:
                    out.append({**entry, "kind": "resumed"})
                resumed = True
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
            entry.update(_other(event.kind, data))
        out.append(entry)
    return out


def _message(message: Any, raw: Mapping[str, Any], arguments: Mapping[str, str]) -> Entry:
    if isinstance(message, UserMessage):
        return {"kind": "user", "text": message.text}
    if isinstance(message, AssistantMessage):
        usage = raw.get("usage") or {}
        return {
            "kind": "reply",
            "text": message.text,
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


def _other(kind: str, data: Mapping[str, Any]) -> Entry:
    if kind == "model_retry":
        return {"kind": "retry", "attempt": data["attempt"], "error": data["error"],
                "wait": data["wait"]}  # fmt: skip
    if kind == "limit":
        return {"kind": "limit", "reason": data["reason"], "message": data["message"]}
    if kind == "finished":
        return {"kind": "finished", "stop_reason": data["stop_reason"]}
    return {"kind": "event", "name": kind, "data": dict(data)}


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as the model sent them (a mapping as compact JSON)."""
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def cost_of(usage: Mapping[str, Any]) -> float | None:
    """The cost in US dollars a usage record carries; None when the price is unknown."""
    cost = usage.get("cost_usd")
    return float(cost) if cost is not None else None
