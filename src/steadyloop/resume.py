"""Where a run stands, so that it can go on: its transcript, budget, finished calls and decisions
(a `RunStart` the loop goes on from).

Two sources: the run log (a run killed, interrupted, failed, or paused for approval, possibly
hours ago in another process), or a paused `RunResult` in hand (no log needed). A paused run
goes on only with a decision for each waiting call, and only once.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from steadyloop.approvals import (
    WAITING_TEXT,
    Decision,
    Decisions,
    Defer,
    PendingCall,
    check_decisions,
    logged_decision,
)
from steadyloop.errors import ConfigError
from steadyloop.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    message_from_dict,
)
from steadyloop.result import RunResult
from steadyloop.start import RunStart
from steadyloop.store import LoggedEvent, RunInfo, RunLog, reading

__all__ = ["logged_result", "paused_point", "resume_point", "waiting_calls"]

RESUMABLE = ("running", "interrupted", "error")
# A paused run is marked "paused"; "limit" is how the log reads one whose process died between
# logging the pause and marking it.
PAUSED = ("paused", "limit")


def resume_point(store: RunLog, run_id: str, decisions: Decisions | None = None) -> RunStart:
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
    messages = reading.transcript(events)
    own = messages[info.history :]
    prompt = None if any(isinstance(m, UserMessage) for m in own) else info.prompt
    replies = [m for m in own if isinstance(m, AssistantMessage)]
    usage = _spent(events, info.history)
    recovered = {call_id: record.result for call_id, record in reading.tool_records(events).items()}
    waiting = _waiting(messages, events, recovered, info.id)
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
    # A run that paused at its last reply goes on from the reply, also when its waiting calls
    # were decided and then cut short by a kill (their answers still read "waiting").
    if waiting or _paused_at_reply(messages):
        messages = _open_calls(messages)
    cut_short = _cut_short(messages[info.history :], events, {*recovered, *decided})
    return RunStart(
        run_id=info.id,
        prompt=UserMessage(prompt) if prompt is not None else None,
        messages=messages,
        turns_used=len(replies),
        usage=usage,
        usage_by_model=_by_model(replies, info.model),
        recovered=recovered,
        decisions=decided,
        cut_short=cut_short,
    )


def paused_point(result: RunResult[Any], decisions: Decisions | None) -> RunStart:
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
    return RunStart(
        run_id=result.run_id,
        messages=_open_calls(result.messages),
        turns_used=pause.turns,
        usage=result.usage,
        usage_by_model=result.usage_by_model,
        recovered=dict(pause.held),
        decisions=decided,
    )


def logged_result(store: RunLog, info: RunInfo, output_type: Any = None) -> RunResult[Any]:
    """The result of a run that finished, as its log has it (nothing is called again). A typed
    answer was logged as JSON: it is validated again as `output_type` (the type the run is
    asked for), so it comes back as the same value the run returned; `ConfigError` if it does
    not fit that type."""
    events = store.events(info.id)
    finished = [e for e in events if e.kind == "finished"]
    messages = reading.transcript(events)
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    text = last.text if last is not None else ""
    output = finished[-1].data["output"] if finished else text
    if output is not None and output_type not in (None, str):
        output = _typed(output, output_type, info.id)
    return RunResult(
        output=output,
        messages=messages,
        stop_reason=info.stop_reason or "end_turn",
        usage=info.usage,
        run_id=info.id,
        text=text,
        usage_by_model=_by_model(
            [m for m in messages[info.history :] if isinstance(m, AssistantMessage)], info.model
        ),
    )


def waiting_calls(store: RunLog, run_id: str) -> list[PendingCall]:
    """The calls logged run `run_id` waits on for a decision; empty when it is not paused for
    approval. Nothing is decided or claimed: this only reads the log."""
    info = store.run(run_id)
    if info.stop_reason != "approval" or info.status not in PAUSED:
        return []
    events = store.events(info.id)
    recovered = {call_id: record.result for call_id, record in reading.tool_records(events).items()}
    return _waiting(reading.transcript(events), events, recovered, info.id)


def _typed(logged: Any, output_type: Any, run_id: str) -> Any:
    """The logged JSON of a typed answer as a value of `output_type`, validated as JSON (the
    form it was logged in)."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(output_type).validate_json(json.dumps(logged))
    except ValidationError as exc:
        name = getattr(output_type, "__name__", repr(output_type))
        problem = exc.errors()[0]["msg"] if exc.errors() else str(exc)
        raise ConfigError(
            f"the logged answer of run {run_id} is not a valid {name} ({problem}): ask for it "
            "with the answer type it was made with (output=...)"
        ) from None


def _by_model(replies: Sequence[AssistantMessage], model: str) -> dict[str, Usage]:
    """What `replies` used, by the spec of the model that made each (`model` for a reply
    logged without one)."""
    spent: dict[str, Usage] = {}
    for reply in replies:
        name = reply.model or model
        spent[name] = spent.get(name, Usage()) + reply.request_usage()
    return spent


def _spent(events: Sequence[LoggedEvent], history: int) -> Usage:
    """What the run has used, as the loop counted it: the usage logged when it last stopped
    (a pause), plus each reply logged since, its unreported and cached tokens included, and
    what each sub-agent call answered since spent."""
    usage = Usage()
    for event in events:
        if event.kind == "finished":
            usage = Usage.from_dict(event.data["usage"])
        elif event.kind == "tool_finished" and "usage" in event.data:
            usage += Usage.from_dict(event.data["usage"])
        elif event.kind == "message" and event.data["index"] >= history:
            reply = message_from_dict(event.data["message"])
            if isinstance(reply, AssistantMessage):
                usage += reply.request_usage()
                if reply.stop_reason != "max_tokens":  # calls cut off are not dispatched
                    usage += Usage(tool_calls=len(reply.tool_calls))
    return usage


def _waiting(
    messages: Sequence[Message],
    events: Sequence[LoggedEvent],
    recovered: Mapping[str, Any],
    run_id: str,
) -> list[PendingCall]:
    """The calls of the last reply that were deferred and are not answered yet."""
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None:
        return []
    answered = {m.call_id for m in messages if isinstance(m, ToolResult) and not _waits(m)}
    answered |= set(recovered)
    decided = _logged_decisions(events)
    return [
        PendingCall(call.id, call.name, decided[call.id]["arguments"], run_id)
        for call in last.tool_calls
        if call.id not in answered and decided.get(call.id, {}).get("decision") == "deferred"
    ]


def _cut_short(
    own: Sequence[Message], events: Sequence[LoggedEvent], settled: Collection[str]
) -> tuple[tuple[ToolCall, Decision | None], ...]:
    """The calls of the run's own last reply with no answer in the transcript and none
    `settled` (answered in the log, or decided already), each with its logged decision."""
    last = next((m for m in reversed(own) if isinstance(m, AssistantMessage)), None)
    if last is None:
        return ()
    answered = {m.call_id for m in own if isinstance(m, ToolResult)} | set(settled)
    decided = _logged_decisions(events)
    return tuple(
        (call, logged_decision(logged) if (logged := decided.get(call.id)) else None)
        for call in last.tool_calls
        if call.id not in answered
    )


def _logged_decisions(events: Sequence[LoggedEvent]) -> dict[str, Mapping[str, Any]]:
    """The last decision logged for each call, by call id."""
    return {e.data["call"]["id"]: e.data for e in events if e.kind == "decision"}


def _waits(result: ToolResult) -> bool:
    """True for the answer a paused run gives a call waiting for a decision."""
    return result.is_error and result.content == WAITING_TEXT


def _paused_at_reply(messages: Sequence[Message]) -> bool:
    """True when an answer after the last reply is the one a pause gives a waiting call."""
    tail = next((i for i in range(len(messages) - 1, -1, -1)
                 if isinstance(messages[i], AssistantMessage)), len(messages))  # fmt: skip
    return any(isinstance(m, ToolResult) and _waits(m) for m in messages[tail + 1 :])


def _open_calls(messages: Sequence[Message]) -> tuple[Message, ...]:
    """A paused transcript without the answers after its last reply: the run goes on from the
    reply, answering its calls again in call order (those that ran with their results)."""
    last = max(i for i, m in enumerate(messages) if isinstance(m, AssistantMessage))
    return tuple(messages[: last + 1])


def _names(waiting: Sequence[PendingCall]) -> str:
    return ", ".join(f"{call.call_id} ({call.name})" for call in waiting) or "no call"
