"""What a run returns (and what a limit error carries): the outcome plus the whole transcript."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from steadyloop.messages import Message, Usage

if TYPE_CHECKING:
    # A TypeVar default needs typing_extensions on Python 3.11, and importing it costs more than
    # the rest of `import steadyloop`; only the type checker needs the default.
    from typing_extensions import TypeVar as DefaultingTypeVar

    from steadyloop.approvals import Pause, PendingCall

    OutputT = DefaultingTypeVar("OutputT", default=str)
else:
    OutputT = TypeVar("OutputT")

__all__ = ["OutputT", "RunResult", "as_json"]


@dataclass(frozen=True, slots=True)
class RunResult(Generic[OutputT]):
    """The outcome of one run.

    `output` is the answer: the text of the last model reply, or for a run with `output=` a
    validated value of that type (None when a limit stopped the run before it). `text` is the
    text of the last model reply either way. `messages` is the whole append-only transcript
    (history given plus everything this run added); `stop_reason` is "end_turn" when the model
    answered, "approval" when gated calls wait for a decision (they are in `pending`; nothing
    was raised, continue with `Agent.resume`), the `reason` of the limit that stopped it, or
    "error" on the partial result a `FatalToolError` carries. `usage_by_model` splits this
    run's model calls (tokens, requests, cost) by the spec of the model that answered them
    (`AssistantMessage.model`): one entry, or one per model of a `Fallback` that answered.
    """

    output: OutputT
    messages: tuple[Message, ...]
    stop_reason: str
    usage: Usage
    run_id: str | None = None
    text: str = ""
    pending: tuple[PendingCall, ...] = ()
    usage_by_model: Mapping[str, Usage] = field(default_factory=dict)
    # what `Agent.resume` needs to continue a paused run without a run log
    _pause: Pause | None = field(default=None, repr=False, compare=False)


def as_json(value: Any) -> Any:
    """An answer as plain JSON values (a model or dataclass as an object), for logs and print."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    import pydantic_core

    return pydantic_core.to_jsonable_python(value, fallback=repr)
