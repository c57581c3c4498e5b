"""What `Agent.stream` yields, and what the run log records: one frozen value per thing that
happened in a run, in the order it happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from steadyloop.messages import Message, Summary, ToolCall, ToolResult, Usage

if TYPE_CHECKING:
    from steadyloop.result import RunResult

__all__ = [
    "CallDecided",
    "Compacted",
    "Event",
    "InstructionsMade",
    "LimitReached",
    "MessageAdded",
    "ModelFallback",
    "ModelRequestStarted",
    "ModelRetry",
    "RunFinished",
    "RunStarted",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolProgress",
    "ToolsChanged",
]


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run began; `history` messages were given, `prompt` is the new user message."""

    run_id: str | None
    model: str
    prompt: str
    history: int


@dataclass(frozen=True, slots=True)
class InstructionsMade:
    """Callable instructions produced this run's system prompt, `text` (logged with the run)."""

    text: str


@dataclass(frozen=True, slots=True)
class ModelRequestStarted:
    """A model call is about to be made: `turn` (1-based), its estimated context size and limit."""

    turn: int
    context_tokens: int
    max_context_tokens: int
    view_length: int


@dataclass(frozen=True, slots=True)
class ModelRetry:
    """A model call failed with a retryable `error` and is made again (`attempt`, from 2) after
    `wait` seconds; text streamed by the failed attempt is void."""

    turn: int
    attempt: int
    error: str
    wait: float


@dataclass(frozen=True, slots=True)
class ModelFallback:
    """A `Fallback`'s model `failed` (spec) with `error` after its own retries, and the same
    request goes to the `next` model; text streamed by the failed model is void."""

    turn: int
    failed: str
    next: str
    error: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's reply text as it streams in."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call as it streams in: `index` within the reply, the call's id and name
    (when this piece carries them) and a fragment of its JSON arguments."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class MessageAdded:
    """An entry was appended to the transcript at `index` (user, reply, result or summary)."""

    index: int
    message: Message


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call was dispatched."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool call was answered. `output` is the full text before truncation (kept for the log);
    `result` is what the model reads; `attempts` counts tries including retries. `cancelled`:
    the run stopped before the call finished, so its outcome is unknown. `arguments`: the
    call's arguments as read from its JSON, None when they were not read (an unknown tool,
    text that is not a JSON object). `usage`: what the call spent on models (a sub-agent's
    run), rolled up into the calling run's usage; None for a plain tool."""

    call: ToolCall
    result: ToolResult
    output: str
    duration: float
    attempts: int
    cancelled: bool = False
    arguments: Mapping[str, Any] | None = None
    usage: Usage | None = None

    @property
    def is_error(self) -> bool:
        return self.result.is_error

    @property
    def truncated(self) -> bool:
        return len(self.output) != len(self.result.content)


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running tool call reported how far it got (an MCP server's `notifications/progress`):
    `progress` and `total` as it sent them (`total` None when unknown), `message` None when it
    sent none. Streamed, never logged: it changes nothing in the transcript."""

    call: ToolCall
    progress: float
    total: float | None
    message: str | None


@dataclass(frozen=True, slots=True)
class ToolsChanged:
    """The tools a toolset offers changed, and the next model request offers the new list:
    `source` names the toolset (an MCP server's command line or URL); `added`, `removed` and
    `changed` (same name, new description or schema) are tool names as the model sees them;
    `tools` every tool name the toolset offers now."""

    source: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CallDecided:
    """A gated call was decided: `decision` is "approved", "denied", "edited" or "deferred"
    (waiting for `resume`). `arguments` are the model's; `reason` says why a call was denied,
    `edited` holds the arguments it ran with instead."""

    call: ToolCall
    decision: str
    arguments: Mapping[str, Any]
    reason: str = ""
    edited: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Compacted:
    """Compaction appended `summary`; the context went from `tokens_before` to `tokens_after`."""

    summary: Summary
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class LimitReached:
    """The run stopped at a limit; `reason` is the stop reason, `message` says which and why."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended with `result` (answered, or stopped by a limit)."""

    result: RunResult[Any]


Event: TypeAlias = (
    RunStarted
    | InstructionsMade
    | ModelRequestStarted
    | ModelRetry
    | ModelFallback
    | TextDelta
    | ToolCallDelta
    | MessageAdded
    | ToolCallStarted
    | ToolCallFinished
    | ToolProgress
    | ToolsChanged
    | CallDecided
    | Compacted
    | LimitReached
    | RunFinished
)
