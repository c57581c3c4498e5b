"""Every exception steadyloop raises, in one tree.

    SteadyloopError
    ├── ConfigError (also ValueError)   bad agent or tool definition, unknown model spec, SDK not
    │                                   installed, missing or rejected credentials. Never retried.
    ├── ModelError                      the model provider failed (after retries); `.retryable`
    │   └── ContextWindowExceeded       the provider said the prompt is too long
    ├── LimitExceeded                   the run hit a limit; `.reason`, `.result` (partial result)
    │   ├── TurnLimitExceeded           `Limits.max_turns` model calls were made
    │   ├── ContextLimitExceeded        the next request would not fit `Limits.max_context_tokens`
    │   ├── RepeatLimitExceeded         the same call failed the same way `max_repeats` turns
    │   │                               in a row, or kept returning the same result
    │   ├── CostLimitExceeded           the run has cost `Limits.max_cost_usd` or more
    │   └── ToolCallLimitExceeded       a reply asked for calls past `Limits.max_tool_calls`
    ├── RunLogError                     the run log could not be written or read; `.run_id`
    ├── ToolError                       raised by tool code: the message goes to the model verbatim
    └── FatalToolError                  raised by tool code: stops the run and propagates

Errors the model can fix (bad arguments, unknown tools, `ToolError`, timeouts) never leave the
loop: they become error results the model reads. Everything here is what the caller must handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from steadyloop.result import RunResult

__all__ = [
    "ConfigError",
    "ContextLimitExceeded",
    "ContextWindowExceeded",
    "CostLimitExceeded",
    "FatalToolError",
    "LimitExceeded",
    "ModelError",
    "RepeatLimitExceeded",
    "RunLogError",
    "SteadyloopError",
    "ToolCallLimitExceeded",
    "ToolError",
    "TurnLimitExceeded",
]


class SteadyloopError(Exception):
    """Base class of every error raised by steadyloop."""


class ConfigError(SteadyloopError, ValueError):
    """Raised when something the caller set up cannot work; the message says what to change."""


class RunLogError(SteadyloopError):
    """Raised when the run log failed (disk full, a damaged file, a lock held too long).

    A failed write stops only the run it belongs to (`run_id`); other runs sharing the log go
    on, and the stopped run can be resumed from what was committed once the cause is fixed.
    """

    def __init__(self, message: str, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class ModelError(SteadyloopError):
    """Raised when the model provider failed; `retryable` says whether trying again can help.

    `status` is the HTTP status when there was one; `provider` names the adapter.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        provider: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.provider = provider
        self.retry_after = retry_after


class ContextWindowExceeded(ModelError):
    """Raised by an adapter when the provider rejects a request as longer than its context window.

    `limit` is the window size when the provider's message states it.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str | None = None,
        limit: int | None = None,
    ) -> None:
        super().__init__(message, retryable=False, status=status, provider=provider)
        self.limit = limit


class LimitExceeded(SteadyloopError):
    """Raised when a run stops at one of its limits; nothing is lost.

    `reason` is the `stop_reason` of the partial `result`, whose `messages` hold the whole
    transcript up to the stop (every tool call answered).
    """

    reason = "limit"

    def __init__(self, message: str, result: RunResult[Any]) -> None:
        super().__init__(message)
        self.result = result

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles with its result: DBOS and Ray store the errors a run raised by pickling them,
        and the default (the message alone) cannot be built again."""
        return (type(self), (str(self), self.result), self.__dict__)


class TurnLimitExceeded(LimitExceeded):
    """Raised before a model call when the run already made `Limits.max_turns` of them."""

    reason = "turn_limit"


class ContextLimitExceeded(LimitExceeded):
    """Raised before a model call whose request would exceed `Limits.max_context_tokens`.

    Also raised when the provider reports the context too long and compaction cannot help.
    """

    reason = "context_limit"


class RepeatLimitExceeded(LimitExceeded):
    """Raised when the same call failed with the same error `Limits.max_repeats` turns in a
    row, or returned the same result once more after the model was told it had it
    (`Limits.max_same_results`)."""

    reason = "repeat_limit"


class CostLimitExceeded(LimitExceeded):
    """Raised before a model call when what the run has cost reached `Limits.max_cost_usd`."""

    reason = "cost_limit"


class ToolCallLimitExceeded(LimitExceeded):
    """Raised once every call of a reply is answered, before the next model call, when the reply
    asked for more tool calls than `Limits.max_tool_calls` left: the calls past the limit were
    answered "not run"."""

    reason = "tool_call_limit"


class ToolError(SteadyloopError):
    """Raise in a tool to tell the model what went wrong; the message reaches it verbatim."""


class FatalToolError(SteadyloopError):
    """Raise in a tool when the run cannot usefully go on; it stops the run and propagates.

    When it leaves `Agent.run`, `result` holds the partial `RunResult` (every call answered).
    """

    result: RunResult[Any] | None = None
