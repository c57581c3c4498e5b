"""What the run log holds, whatever the database: the row format, written down.

Every store keeps one row per run (`RunInfo`, columns `RUN_COLUMNS`) and one row per event
(`LoggedEvent`: a sequence number, a time, a `kind` and JSON `data`). `EventKind` names the kinds,
and one `TypedDict` per kind says what its data holds (`DATA_BY_KIND`); `docs/run-log.md` shows
the same table, and a test keeps the two equal. Messages, calls and usage inside the data are in
the form their own `to_dict()` writes (`steadyloop.messages`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from steadyloop.messages import ToolCall, ToolResult, Usage, message_from_dict

__all__ = [
    "DATA_BY_KIND",
    "EVENT_KINDS",
    "LINK_COLUMNS",
    "RUN_COLUMNS",
    "CompactedData",
    "DecisionData",
    "EventKind",
    "FinishedData",
    "InstructionsData",
    "LimitData",
    "LoggedEvent",
    "MessageData",
    "ModelFallbackData",
    "ModelRequestData",
    "ModelRetryData",
    "RunInfo",
    "RunLinks",
    "ToolFinishedData",
    "ToolRecord",
    "ToolsChangedData",
    "finished_result",
]

LINK_COLUMNS = ("session", "previous_run_id", "parent_run_id", "parent_call_id")
"""The run columns schema version 2 added: how a run is linked to others (see `RunLinks`)."""

RUN_COLUMNS = (
    "id", "created", "updated", "model", "prompt", "history", "config", "status", "stop_reason",
    "error", "usage", *LINK_COLUMNS,
)  # fmt: skip

EventKind = Literal[
    "message",
    "tool_finished",
    "model_request",
    "model_retry",
    "model_fallback",
    "compacted",
    "limit",
    "tools_changed",
    "instructions",
    "decision",
    "finished",
]
"""The kinds of event a run log holds, one per row."""


class MessageData(TypedDict):
    """A message appended to the transcript: the history given, a reply, a result the model read
    (logged only when it differs from its `tool_finished` row's, or that row is missing)."""

    index: int
    message: dict[str, Any]


class ToolFinishedData(TypedDict):
    """A tool call answered. `output` is the tool's full output; `result` is the result message
    the model read, without its `content` when that equals `output` (nothing was truncated);
    `usage` what the call spent on models (a sub-agent's run, rolled up into this run's)."""

    call: dict[str, Any]
    result: dict[str, Any]
    output: str
    duration: float
    attempts: int
    usage: NotRequired[dict[str, Any]]


class ModelRequestData(TypedDict):
    """A model request is about to be sent: the turn, the context's estimated size and its
    limit, and how many messages the model reads."""

    turn: int
    context_tokens: int
    max_context_tokens: int
    view_length: int


class ModelRetryData(TypedDict):
    """A model request failed and is tried again after `wait` seconds."""

    turn: int
    attempt: int
    error: str
    wait: float


class ModelFallbackData(TypedDict):
    """A `Fallback`'s model `failed` with `error` after its retries; the request goes to `next`."""

    turn: int
    failed: str
    next: str
    error: str


class CompactedData(TypedDict):
    """Compaction summarised the first `replaced` messages."""

    replaced: int
    tokens_before: int
    tokens_after: int


class LimitData(TypedDict):
    """The run stopped at a limit: `reason` is the stop reason, `message` says which and why."""

    reason: str
    message: str


class ToolsChangedData(TypedDict):
    """A toolset's tools changed and the next model request offers the new list: `source` names
    it (an MCP server's command line or URL), `added`, `removed` and `changed` (new description
    or schema) are tool names, `tools` all the names it offers now."""

    source: str
    added: list[str]
    removed: list[str]
    changed: list[str]
    tools: list[str]


class InstructionsData(TypedDict):
    """The instructions a run was given, when they were made by a function."""

    text: str


class DecisionData(TypedDict):
    """A gated call was decided: approved, denied (`reason`), edited (`edited` holds the
    arguments it ran with) or deferred (waiting for `resume`)."""

    call: dict[str, Any]
    decision: str
    arguments: dict[str, Any]
    reason: NotRequired[str]
    edited: NotRequired[dict[str, Any]]


class FinishedData(TypedDict):
    """The run ended: how, its answer as JSON values, and its usage."""

    stop_reason: str
    output: Any
    usage: dict[str, Any]


DATA_BY_KIND: Mapping[EventKind, type] = {
    "message": MessageData,
    "tool_finished": ToolFinishedData,
    "model_request": ModelRequestData,
    "model_retry": ModelRetryData,
    "model_fallback": ModelFallbackData,
    "compacted": CompactedData,
    "limit": LimitData,
    "tools_changed": ToolsChangedData,
    "instructions": InstructionsData,
    "decision": DecisionData,
    "finished": FinishedData,
}
"""Each kind's data, as its `TypedDict`."""

EVENT_KINDS: tuple[EventKind, ...] = tuple(DATA_BY_KIND)


@dataclass(frozen=True, slots=True)
class RunLinks:
    """How a run is linked to others, all None for a plain run: the `session` it is a turn of,
    the run whose transcript it continued (`previous_run_id`), and for a sub-agent's run the
    run and call that started it (`parent_run_id`, `parent_call_id`)."""

    session: str | None = None
    previous_run_id: str | None = None
    parent_run_id: str | None = None
    parent_call_id: str | None = None

    def values(self) -> tuple[str | None, ...]:
        """The link columns, in `LINK_COLUMNS` order."""
        return (self.session, self.previous_run_id, self.parent_run_id, self.parent_call_id)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run's row: `status` is running, answered, limit, paused (for approval), error or
    interrupted; `session`, `previous_run_id`, `parent_run_id` and `parent_call_id` its links
    (see `RunLinks`)."""

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
    session: str | None = None
    previous_run_id: str | None = None
    parent_run_id: str | None = None
    parent_call_id: str | None = None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> RunInfo:
        """A run from its row, columns in `RUN_COLUMNS` order."""
        return cls(
            id=row[0], created=row[1], updated=row[2], model=row[3], prompt=row[4],
            history=row[5], config=json.loads(row[6]), status=row[7], stop_reason=row[8],
            error=row[9], usage=Usage.from_dict(json.loads(row[10])), session=row[11],
            previous_run_id=row[12], parent_run_id=row[13], parent_call_id=row[14],
        )  # fmt: skip

    @property
    def links(self) -> RunLinks:
        """The run's links to other runs."""
        return RunLinks(self.session, self.previous_run_id, self.parent_run_id, self.parent_call_id)

    @property
    def finished(self) -> bool:
        """True when the run ended by answering or at a limit (nothing is left to resume)."""
        return self.status in ("answered", "limit")


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One logged event: `kind` and its JSON `data` (see `DATA_BY_KIND`), `at` seconds since the
    epoch."""

    seq: int
    at: float
    kind: EventKind
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
        return cls(call, finished_result(data), data["output"], data["duration"], data["attempts"])


def finished_result(data: Mapping[str, Any]) -> ToolResult:
    """The result a `tool_finished` row records (its content is the output unless truncated)."""
    result = message_from_dict({"content": data["output"], **data["result"]})
    assert isinstance(result, ToolResult)
    return result
