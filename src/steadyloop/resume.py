"""Where a run stands, so that it can go on: its transcript, budget, finished calls and decisions.

Two sources: the run log (a run killed, interrupted, failed, or paused for approval, possibly
hours ago in another process), or a paused `RunResult` in hand (no log needed). A paused run
goes on only with a decision for each waiting call, and only once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from steadyloop.approvals import Decision, Decisions, Defer, PendingCall, check_decisions
from steadyloop.errors import ConfigError
from steadyloop.messages import AssistantMessage, Message, ToolResult, Usage, UserMessage
from steadyloop.result import RunResult
from steadyloop.store import LoggedEvent, RunInfo, RunLog, records

__all__ = ["ResumePoint", "logged_result", "paused_point", "resume_point"]

RESUMABLE = ("running", "interrupted", "error")
# A paused run is marked "paused"; "limit" is how the log reads one whose process died between
# logging the pause and marking it.
PAUSED = ("paused", "limit")


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """A run's state: its whole transcript, the model calls and usage it has spent, the results
    of tool calls that finished (logged, or held back by a pause) but may not be in the
    transcript yet, and the decisions for the calls it waits on. `prompt` is the run's prompt
    when the process died before it was logged as a message (the run's row has it): the run
    goes on by appending it, as it was about to."""

    run_id: str | None
    messages: tuple[Message, ...]
    turns_used: int
    usage: Usage
    recovered: dict[str, ToolResult]
    decisions: Mapping[str, Decision]
    prompt: str | None = None


def resume_point(store: RunLog, run_id: str, decisions: Decisions | None = None) -> ResumePoint:
    """Reads run `run_id` from the log; `ConfigError` if it cannot go on:
    a run paused for approval needs `decisions` (one per waiting call), any other must not
    have any."""
    info = store.run(run_id)
    paused = info.stop_reason == "approval" and info.status in PAUSED
    if decisions is not None and not paused:
        raise ConfigError(
            f"run {info.id} is not waiting for approval (it is {info.status}"
            f"{f', {info.stop_reason}' if info.stop_reason else ''}); nothing was run"
        )
    if not paused and info.status not in RESUMABLE:
        raise ConfigError(
            f"run {info.id} ended with status {info.status!r} and cannot be resumed; only runs "
            f"that were {', '.join(RESUMABLE)} can (start a new run with its history instead)"
        )
    # One read of the log: the transcript, the finished calls and the waiting ones come from it.
    events = store.events(info.id)
    messages = records.transcript(events)
    own = messages[info.history :]
    prompt = None if any(isinstance(m, UserMessage) for m in own) else info.prompt
    replies = [m for m in own if isinstance(m, AssistantMessage)]
    usage = Usage(requests=len(replies), tool_calls=sum(len(r.tool_calls) for r in replies))
    for reply in replies:
        if reply.usage is not None:
            usage += Usage(input_tokens=reply.usage.input_tokens,
                           output_tokens=reply.usage.output_tokens,
                           cost_usd=reply.usage.cost_usd)  # fmt: skip
    recovered = {call_id: record.result for call_id, record in records.tool_records(events).items()}
    waiting = _waiting(messages, events, recovered)
    if paused and decisions is None:
        raise ConfigError(
            f"run {info.id} is waiting for decisions on {_names(waiting)}: pass "
            "decisions={call_id: Approve() | Deny(reason) | Edit(arguments)}"
        )
    decided: Mapping[str, Decision]
    if paused:
        decided = check_decisions(waiting, decisions or {})
    else:  # killed after deferring calls but before the pause was logged: they wait again
        decided = {call.call_id: Defer() for call in waiting}
    return ResumePoint(info.id, messages, len(replies), usage, recovered, decided, prompt)


def paused_point(result: RunResult[Any], decisions: Decisions | None) -> ResumePoint:
    """The state a paused result carries (no run log needed); `ConfigError` if it is not
    paused, was resumed already, or the decisions do not fit its waiting calls."""
    pause = result._pause
    if result.stop_reason != "approval" or pause is None:
        raise ConfigError(
            f"this result is not paused for approval (its stop_reason is "
            f"{result.stop_reason!r}); nothing was run"
        )
    if pause.resumed:
        raise ConfigError(
            "this paused result was resumed already; nothing was run (to go on, resume the "
            "result that resume returned)"
        )
    decided = check_decisions(pause.pending, decisions or {})
    pause.resumed = True
    return ResumePoint(
        result.run_id, result.messages, pause.turns, result.usage, dict(pause.held), decided
    )


def logged_result(store: RunLog, info: RunInfo) -> RunResult[Any]:
    """The result of a run that finished, as its log has it (nothing is called again); a typed
    answer comes back as the JSON it was logged as."""
    events = store.events(info.id)
    finished = [e for e in events if e.kind == "finished"]
    messages = records.transcript(events)
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    text = last.text if last is not None else ""
    return RunResult(
        output=finished[-1].data["output"] if finished else text,
        messages=messages,
        stop_reason=info.stop_reason or "end_turn",
        usage=info.usage,
        run_id=info.id,
        text=text,
    )


def _waiting(
    messages: Sequence[Message], events: Sequence[LoggedEvent], recovered: Mapping[str, Any]
) -> list[PendingCall]:
    """The calls of the last reply that were deferred and are not answered yet."""
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None:
        return []
    answered = {m.call_id for m in messages if isinstance(m, ToolResult)} | set(recovered)
    decided: dict[str, Mapping[str, Any]] = {}
    for event in events:
        if event.kind == "decision":
            decided[event.data["call"]["id"]] = event.data
    return [
        PendingCall(call.id, call.name, decided[call.id]["arguments"])
        for call in last.tool_calls
        if call.id not in answered and decided.get(call.id, {}).get("decision") == "deferred"
    ]


def _names(waiting: Sequence[PendingCall]) -> str:
    return ", ".join(f"{call.call_id} ({call.name})" for call in waiting) or "no call"
