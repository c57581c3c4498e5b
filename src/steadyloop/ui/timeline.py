"""When each model call and tool call of a run ran, for the page's timeline; and what each turn
used, for its charts.

Times are seconds since the epoch, as logged. A model call starts at its `model_request` row and
ends at the reply that follows it, or, when no reply came (the call failed and was made again
after a compaction or a resume), at the next `model_request`. A tool call ends at its
`tool_finished` row, which carries its duration. The calls of one reply run in parallel, so each
takes the lane of its place in the reply (lane 0 is the model's): parallel calls never share a
lane. A call with no end in the log is still running, or never finished in a run that stopped:
it is `open` and reaches the timeline's end.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from steadyloop.store import LoggedEvent
from steadyloop.ui.entries import cost_of

__all__ = ["timeline", "turns"]

Mark = dict[str, Any]


def timeline(events: Iterable[LoggedEvent], model: str, start: float, end: float) -> dict[str, Any]:
    """The marks of a run's calls and stops between `start` and `end` (the run's last moment,
    or now while it runs), with the number of lanes they use."""
    marks: list[Mark] = []
    calling: Mark | None = None  # the model call waiting for its reply
    waiting: dict[str, Mark] = {}  # tool calls of the latest reply not answered yet, by id
    for event in events:
        at, data = event.at, event.data
        if event.kind in ("model_request", "compacted") and calling is not None:
            calling.update(end=at, error=True)  # no reply: a compaction or a resume came next
            calling = None
        if event.kind == "model_request":
            calling = _mark("model", model, event, lane=0, turn=data["turn"], retries=0)
            marks.append(calling)
        elif event.kind == "model_retry" and calling is not None:
            calling["retries"] += 1
        elif event.kind == "message" and data["message"]["type"] == "assistant":
            if calling is not None:
                calling["end"] = at
                calling = None
            for place, call in enumerate(data["message"].get("tool_calls", ())):
                waiting[call["id"]] = _mark("tool", call["name"], event, lane=place + 1)
        elif event.kind == "message" and data["message"]["type"] == "tool_result":
            waiting.pop(data["message"]["call_id"], None)  # answered without running here
        elif event.kind == "tool_finished":
            call = data["call"]
            mark = waiting.pop(call["id"], None) or _mark("tool", call["name"], event, lane=1)
            error = bool(data["result"].get("is_error", False))
            marks.append({**mark, "seq": event.seq, "start": at - data["duration"], "end": at,
                          "error": error})  # fmt: skip
        elif event.kind in ("compacted", "limit"):
            name = "compaction" if event.kind == "compacted" else data["message"]
            marks.append({**_mark(event.kind, name, event, lane=0), "end": at})
    for mark in [*waiting.values(), *([calling] if calling is not None else [])]:
        mark.update(end=end, open=True)
    marks.extend(waiting.values())
    return {
        "start": start,
        "end": end,
        "lanes": 1 + max((m["lane"] for m in marks), default=0),
        "marks": marks,
    }


def _mark(kind: str, name: str, event: LoggedEvent, *, lane: int, **more: Any) -> Mark:
    """A mark starting at `event`; `seq` points the page at the event's transcript entry."""
    return {"kind": kind, "name": name, "seq": event.seq, "start": event.at, "end": None,
            "lane": lane, "open": False, "error": False, **more}  # fmt: skip


def turns(events: Iterable[LoggedEvent]) -> list[dict[str, Any]]:
    """Per turn: the context size sent (and its limit), the tokens the reply used and its cost
    (None when unknown). A turn made again after a compaction or a resume counts once."""
    by_turn: dict[int, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for event in events:
        data = event.data
        if event.kind == "model_request":
            current = {
                "turn": data["turn"],
                "context_tokens": data["context_tokens"],
                "max_context_tokens": data["max_context_tokens"],
                "output_tokens": None,
                "cost": None,
            }
            by_turn[data["turn"]] = current
        elif event.kind == "message" and data["message"]["type"] == "assistant" and current:
            usage = data["message"].get("usage") or {}
            current.update(output_tokens=usage.get("output_tokens"), cost=cost_of(usage))
            current = None
    return [by_turn[turn] for turn in sorted(by_turn)]
