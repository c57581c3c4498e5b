"""Recording a run: the loop's events become the rows a store writes.

`recorder` turns each event into an `EventRow` (its kind and data, as `steadyloop.store.rows`
writes them down) and a run's end into a `FinishRow`; the stores only move rows. Sequence numbers
are deterministic: a reply that asks for N calls takes the next number and reserves the N after
it for the calls' answers, in call order, so where a result lands never depends on which call
finished first. Writing a row whose (run, number) is taken is a no-op in every store, so a step
replayed or retried cannot corrupt a log.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

from steadyloop.events import (
    CallDecided,
    Compacted,
    Event,
    InstructionsMade,
    LimitReached,
    MessageAdded,
    ModelFallback,
    ModelRequestStarted,
    ModelRetry,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
    ToolsChanged,
)
from steadyloop.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    Usage,
    message_from_dict,
)
from steadyloop.result import as_json
from steadyloop.store.rows import (
    CompactedData,
    DecisionData,
    EventKind,
    FinishedData,
    InstructionsData,
    LimitData,
    LoggedEvent,
    MessageData,
    ModelFallbackData,
    ModelRequestData,
    ModelRetryData,
    RunLinks,
    ToolFinishedData,
    ToolsChangedData,
)

__all__ = [
    "EventRow",
    "FinishRow",
    "Row",
    "RunRow",
    "StatusRow",
    "event_data",
    "event_text",
    "next_seqs",
    "recorder",
]


# The rows' JSON text: what `json.dumps` writes, without its check for reference cycles (the
# data are trees made by `to_dict`), which costs about as much as the writing itself.
_dumps = json.JSONEncoder(check_circular=False).encode


@dataclass(frozen=True, slots=True)
class RunRow:
    """A new run and the history it starts from (logged as its first events)."""

    run_id: str
    at: float
    model: str
    prompt: str
    history: tuple[Message, ...]
    config: Mapping[str, Any]
    links: RunLinks | None = None

    def values(self) -> tuple[Any, ...]:
        """The run's row, in `RUN_COLUMNS` order."""
        return (
            self.run_id, self.at, self.at, self.model, self.prompt, len(self.history),
            _dumps(dict(self.config)), "running", None, None, _dumps(Usage().to_dict()),
            *(self.links or RunLinks()).values(),
        )  # fmt: skip

    def events(self) -> list[tuple[Any, ...]]:
        """The history's event rows: seq 0..n-1."""
        return [
            (self.run_id, index, self.at, "message",
             _dumps({"index": index, "message": message.to_dict()}))
            for index, message in enumerate(self.history)
        ]  # fmt: skip


@dataclass(slots=True)  # not frozen: a frozen dataclass is several times dearer to make
class EventRow:
    """One event of a run at its sequence number; serialised only when written."""

    run_id: str
    seq: int
    at: float
    event: Event

    def values(self) -> tuple[Any, ...]:
        kind, text = event_text(self.event)
        return (self.run_id, self.seq, self.at, kind, text)


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
        return (status, self.stop_reason, _dumps(self.usage.to_dict()), self.at, self.run_id)


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
        usage = _dumps(self.usage.to_dict()) if self.usage is not None else None
        return (self.status, self.error, self.at, usage, self.run_id)


Row = RunRow | EventRow | FinishRow | StatusRow


# Events not worth a row: deltas and progress are chatty, deltas are rebuilt from the reply; a
# call's start is implied by the reply that made it and its finish (which carries its duration).
# Events are final classes: their exact type is looked up, cheaper than `isinstance` chains for
# the ten or so events a turn makes.
_NOT_LOGGED = frozenset({RunStarted, TextDelta, ToolCallDelta, ToolCallStarted, ToolProgress})


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
        if type(event) in _NOT_LOGGED:
            return
        seq: int | None = None
        calls: tuple[ToolCall, ...] = ()
        if type(event) is ToolCallFinished:
            finished[event.call.id] = event.result
            if event.cancelled:
                # Cut short by a stop: its outcome is unknown, and `resume` runs it again
                # (idempotent) or says so. Its slot stays free for that answer.
                return
            seq = reserved.pop(event.call.id, None)
        elif type(event) is MessageAdded:
            message = event.message
            if isinstance(message, ToolResult):
                held = finished.pop(message.call_id, None)
                if held is message or held == message:  # mostly the very same
                    return
                seq = reserved.pop(message.call_id, None)
            elif isinstance(message, AssistantMessage):
                calls = message.tool_calls
        if seq is None:
            seq = next_seq
            next_seq += 1
        for call in calls:
            reserved[call.id] = next_seq
            next_seq += 1
        at = time.time()
        submit(EventRow(run_id, seq, at, event))
        if type(event) is RunFinished:
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


def event_text(event: Event) -> tuple[EventKind, str]:
    """The (kind, JSON text) logged for an event: its `event_data` as JSON. The events every turn
    makes (a model request, its reply, each call's answer) are written as text directly: the
    very text, without building the data and walking it, which costs several times as much;
    anything out of the ordinary (a sub-agent's usage, images, reasoning...) goes the general
    way."""
    kind = type(event)
    text: str | None = None
    try:
        if kind is ToolCallFinished:
            text = _finished_text(event)  # type: ignore[arg-type]
        elif kind is MessageAdded:
            text = _message_text(event)  # type: ignore[arg-type]
        elif kind is ModelRequestStarted:
            text = _request_text(event)  # type: ignore[arg-type]
    except TypeError:  # a field of a type its JSON is not written for here (a str that is not)
        text = None
    if text is not None:
        return _FAST_KINDS[kind], text
    name, data = event_data(event)
    return name, _dumps(data)


# A str as JSON text, as `_dumps` writes it (a TypeError for anything else).
_quote = encode_basestring_ascii
_JSON_BOOL = {True: "true", False: "false"}
_FAST_KINDS: dict[type, EventKind] = {
    ToolCallFinished: "tool_finished",
    MessageAdded: "message",
    ModelRequestStarted: "model_request",
}


def _finished_text(event: ToolCallFinished) -> str | None:
    """`ToolFinishedData` as JSON text; None when it is not the usual kind (see `event_text`)."""
    result, duration, attempts = event.result, event.duration, event.attempts
    if (
        event.usage is not None
        or type(result) is not ToolResult
        or result.images
        or type(result.is_error) is not bool
        or type(attempts) is not int
        or type(duration) is not float
        or not math.isfinite(duration)
    ):
        return None
    content = "" if result.content == event.output else f', "content": {_quote(result.content)}'
    return (
        f'{{"call": {_call_text(event.call)}, "result": {{"type": "tool_result", '
        f'"call_id": {_quote(result.call_id)}, "name": {_quote(result.name)}{content}, '
        f'"is_error": {_JSON_BOOL[result.is_error]}}}, "output": {_quote(event.output)}, '
        f'"duration": {float.__repr__(duration)}, "attempts": {attempts}}}'
    )


def _message_text(event: MessageAdded) -> str | None:
    """`MessageData` as JSON text (a reply written directly, any other message the general
    way); None when it is not the usual kind (see `event_text`)."""
    index, message = event.index, event.message
    if type(index) is not int:
        return None
    if type(message) is AssistantMessage:
        text = _reply_text(message)
        if text is None:
            return None
    else:
        text = _dumps(message.to_dict())
    return f'{{"index": {index}, "message": {text}}}'


def _reply_text(reply: AssistantMessage) -> str | None:
    """`AssistantMessage.to_dict()` as JSON text, for a reply without reasoning or the
    provider's own form (those go the general way: None)."""
    if reply.reasoning or reply.native is not None or reply.reasoning_text:
        return None
    text = f'{{"type": "assistant", "text": {_quote(reply.text)}'
    if reply.tool_calls:
        text += f', "tool_calls": [{", ".join(map(_call_text, reply.tool_calls))}]'
    if reply.usage is not None:
        text += f', "usage": {_dumps(reply.usage.to_dict())}'
    if reply.stop_reason is not None:
        text += f', "stop_reason": {_quote(reply.stop_reason)}'
    if reply.response_id is not None:
        text += f', "response_id": {_quote(reply.response_id)}'
    if reply.model is not None:
        text += f', "model": {_quote(reply.model)}'
    return text + "}"


def _call_text(call: ToolCall) -> str:
    """`ToolCall.to_dict()` as JSON text."""
    arguments = call.arguments
    written = _quote(arguments) if isinstance(arguments, str) else _dumps(dict(arguments))
    return f'{{"id": {_quote(call.id)}, "name": {_quote(call.name)}, "arguments": {written}}}'


def _request_text(event: ModelRequestStarted) -> str | None:
    """`ModelRequestData` as JSON text; None when a count is not an int."""
    turn, tokens, limit, length = (
        event.turn, event.context_tokens, event.max_context_tokens, event.view_length
    )  # fmt: skip
    if type(turn) is type(tokens) is type(limit) is type(length) is int:
        return (
            f'{{"turn": {turn}, "context_tokens": {tokens}, "max_context_tokens": {limit}, '
            f'"view_length": {length}}}'
        )
    return None


def event_data(event: Event) -> tuple[EventKind, Mapping[str, Any]]:
    """The (kind, data) logged for an event, its data as `steadyloop.store.rows` types it."""
    if isinstance(event, MessageAdded):
        return "message", MessageData(index=event.index, message=event.message.to_dict())
    if isinstance(event, ToolCallFinished):
        result = event.result.to_dict()
        if result["content"] == event.output:
            del result["content"]  # not truncated: the output is what the model read
        finished = ToolFinishedData(
            call=event.call.to_dict(),
            result=result,
            output=event.output,
            duration=event.duration,
            attempts=event.attempts,
        )
        if event.usage is not None:
            finished["usage"] = event.usage.to_dict()
        return "tool_finished", finished
    if isinstance(event, ModelRequestStarted):
        return "model_request", ModelRequestData(
            turn=event.turn,
            context_tokens=event.context_tokens,
            max_context_tokens=event.max_context_tokens,
            view_length=event.view_length,
        )
    if isinstance(event, ModelRetry):
        return "model_retry", ModelRetryData(
            turn=event.turn, attempt=event.attempt, error=event.error, wait=event.wait
        )
    if isinstance(event, ModelFallback):
        return "model_fallback", ModelFallbackData(
            turn=event.turn, failed=event.failed, next=event.next, error=event.error
        )
    if isinstance(event, Compacted):
        return "compacted", CompactedData(
            replaced=event.summary.replaced,
            tokens_before=event.tokens_before,
            tokens_after=event.tokens_after,
        )
    if isinstance(event, LimitReached):
        return "limit", LimitData(reason=event.reason, message=event.message)
    if isinstance(event, ToolsChanged):
        return "tools_changed", ToolsChangedData(
            source=event.source,
            added=list(event.added),
            removed=list(event.removed),
            changed=list(event.changed),
            tools=list(event.tools),
        )
    if isinstance(event, InstructionsMade):
        return "instructions", InstructionsData(text=event.text)
    if isinstance(event, CallDecided):
        decision = DecisionData(
            call=event.call.to_dict(), decision=event.decision, arguments=dict(event.arguments)
        )
        if event.reason:
            decision["reason"] = event.reason
        if event.edited is not None:
            decision["edited"] = dict(event.edited)
        return "decision", decision
    if isinstance(event, RunFinished):
        return "finished", FinishedData(
            stop_reason=event.result.stop_reason,
            output=as_json(event.result.output),
            usage=event.result.usage.to_dict(),
        )
    raise TypeError(f"no log row for {type(event).__name__}")
