"""What a run returns (and what a limit error carries): the outcome plus the whole transcript."""

from __future__ import annotations

from dataclasses import dataclass

from steadyloop.messages import Message, Usage

__all__ = ["RunResult"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of one run.

    `messages` is the whole append-only transcript (history given plus everything this run
    added); `output` is the text of the last model reply; `stop_reason` is "end_turn" when the
    model answered, or the `reason` of the limit that stopped it.
    """

    output: str
    messages: tuple[Message, ...]
    stop_reason: str
    usage: Usage
    run_id: str | None = None
