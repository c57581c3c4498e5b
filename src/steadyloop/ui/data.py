"""Everything the run viewer reads from the run log, as the JSON documents its page uses.

This module is the viewer's only way into the log, and it uses nothing but the store's public
reading methods (`runs`, `run`, `events`, `messages`), so any run store offering them can be
browsed. The log is opened read-only: it is never created, written or checkpointed from here.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from steadyloop.messages import AssistantMessage, Usage
from steadyloop.store import LoggedEvent, RunInfo, RunLog, open_store
from steadyloop.store.ids import GENERATED_ID, find_run
from steadyloop.ui.entries import cost_of, transcript
from steadyloop.ui.timeline import timeline, turns

__all__ = ["open_log", "run_entries", "run_list", "run_page"]

# The newest runs a list is made from; filters and search apply to these.
SCANNED = 10_000
# Statuses in the order the filter offers them; others a log may hold follow.
STATUSES = ("running", "paused", "answered", "limit", "error", "interrupted")
SHORT = 8  # id characters a run is shown and opened by


def open_log(location: str | Path) -> RunLog:
    """The run log at `location` (a path or URL), for reading only; `ConfigError` when there is
    none."""
    return open_store(location, read_only=True)


def run_list(
    store: RunLog,
    *,
    status: str = "",
    model: str = "",
    text: str = "",
    limit: int = 200,
    session: str = "",
) -> dict[str, Any]:
    """The newest runs matching the filters (all when empty): `text` is looked for in the
    prompt (any case) and at the start of the id; `session` lists that session's runs, in the
    order they started. Also what the filters can offer."""
    runs = store.session(session) if session else store.runs(SCANNED)
    shared = Counter(run.id[:SHORT] for run in runs)
    needle = text.casefold()
    matching = [
        run
        for run in runs
        if (not status or run.status == status)
        and (not model or run.model == model)
        and (needle in run.prompt.casefold() or run.id.startswith(text))
    ]
    statuses = Counter(run.status for run in runs)
    return {
        "runs": [
            {
                **_summary(run, _usage(store, run)),
                "key": run.id[:SHORT]
                if GENERATED_ID.fullmatch(run.id) and shared[run.id[:SHORT]] == 1
                else run.id,
            }
            for run in matching[: max(limit, 0)]
        ],
        "matching": len(matching),
        "statuses": sorted(statuses, key=_status_order),
        "models": sorted({run.model for run in runs}),
    }


def run_page(store: RunLog, key: str, clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """One run (by id, or by the start of its id) with its timeline and per-turn figures."""
    info = find_run(store, key)
    events = store.events(info.id)
    last = events[-1].at if events else info.created
    end = max(clock(), last) if info.status == "running" else max(info.updated, last)
    usage = _usage(store, info)
    return {
        "run": {
            **_summary(info, usage),
            "updated": info.updated,
            "stop_reason": info.stop_reason,
            "error": info.error,
            "history": info.history,
            "usage": usage.to_dict(),
            "tools": list(info.config.get("tools", ())),
            "links": _links(store, info),
        },
        "timeline": timeline(events, info.model, info.created, end),
        "turns": turns(events),
        "last_seq": _last_seq(events),
    }


def run_entries(
    store: RunLog, key: str, after: int = -1, missing: Collection[int] = ()
) -> dict[str, Any]:
    """The transcript entries of the events after sequence number `after` or numbered in
    `missing`, and the run's status: what a page following a live run asks for each time it
    looks again.

    `missing` are the numbers at or below `last_seq` that had no event yet when the page last
    looked (`missing` in the answer): slots reserved for the answers of calls still open. A
    resume fills them below `last_seq` (a paused call approved), so a page that only asked
    for what comes after `last_seq` would never see those answers.
    """
    info = find_run(store, key)
    events = store.events(info.id)
    last = _last_seq(events)
    logged = {event.seq for event in events}
    wanted = set(missing)
    return {
        "status": info.status,
        "entries": [
            e for e in transcript(events, info.history) if e["seq"] > after or e["seq"] in wanted
        ],
        "last_seq": last,
        "missing": [seq for seq in range(last + 1) if seq not in logged],
    }


def _links(store: RunLog, info: RunInfo) -> dict[str, Any]:
    """The runs a run page links to: its session's runs in order (the run's place among them),
    the run it continued, the run and call that started it, and the sub-agent runs it started.
    `logged` has the prompt and status of each linked run the log holds, so the page names
    them; a parent logged elsewhere (a sub-agent with a log of its own) is not among them."""
    turns = store.session(info.session) if info.session else []
    ids = [run.id for run in turns]
    place = ids.index(info.id) if info.id in ids else -1
    neighbours = turns[max(place - 1, 0) : place + 2] if place >= 0 else []
    children = store.children(info.id)
    others = (info.previous_run_id, info.parent_run_id)
    linked = [*neighbours, *children, *(store.find(other) for other in others if other)]
    return {
        "session": info.session,
        "session_runs": ids,
        "previous": info.previous_run_id,
        "parent": info.parent_run_id,
        "parent_call": info.parent_call_id,
        "children": [{"id": child.id, "call": child.parent_call_id} for child in children],
        "logged": {
            run.id: {"prompt": run.prompt, "status": run.status}
            for run in linked
            if run is not None and run.id != info.id
        },
    }


def _usage(store: RunLog, run: RunInfo) -> Usage:
    """What the run has used: a running run's row holds no totals until it ends, so they are
    added up from the replies it has logged so far."""
    if run.status != "running":
        return run.usage
    usage = Usage()
    for message in store.messages(run.id)[run.history :]:
        if isinstance(message, AssistantMessage):
            usage += message.request_usage() + Usage(tool_calls=len(message.tool_calls))
    return usage


def _summary(run: RunInfo, usage: Usage) -> dict[str, Any]:
    """A run as the list shows it: turns are model calls, tokens those sent and received."""
    return {
        "id": run.id,
        "created": run.created,
        "model": run.model,
        "status": run.status,
        "session": run.session,
        "prompt": run.prompt,
        "turns": usage.requests,
        "tokens": usage.total_tokens,
        "tokens_partial": not usage.tokens_known and usage.total_tokens is not None,
        "cost": cost_of(usage.to_dict()),
    }


def _status_order(status: str) -> tuple[int, str]:
    return (STATUSES.index(status) if status in STATUSES else len(STATUSES), status)


def _last_seq(events: Sequence[LoggedEvent]) -> int:
    return events[-1].seq if events else -1
