"""Answers for the calls a run's last reply left without results, so its history stays valid.

A run that goes on from earlier messages can find the last reply's calls unanswered: the run
before it paused for decisions, or stopped (killed, or at a limit) between the reply and its
results. Every call is answered before the model is asked again. With a new prompt they are
answered "not run". When resuming, a call that finished before the stop gets its logged result;
one that was decided or refused by a call limit is answered now as decided or refused, one whose
tool is idempotent is run again, and any other is answered "interrupted" rather than risk doing
its effect twice.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from steadyloop import texts
from steadyloop.messages import ToolCall, ToolResult

if TYPE_CHECKING:
    from steadyloop.tools import Tool

__all__ = ["not_run", "resumed_answers", "to_run_now"]


def not_run(calls: Sequence[ToolCall]) -> list[ToolResult]:
    """The answers to the open calls when a new prompt goes on from a run's messages."""
    return [_error(call, texts.UNANSWERED) for call in calls]


def to_run_now(
    calls: Sequence[ToolCall],
    recovered: Mapping[str, ToolResult],
    tools: Sequence[Tool],
    settled: Collection[str],
) -> list[ToolCall]:
    """The open calls a resumed run answers by running them: those without a logged result
    (`recovered`, by call id) that were decided or refused (`settled`, by call id), or whose
    tool is idempotent."""
    idempotent = {tool.name for tool in tools if tool.idempotent}
    return [
        call
        for call in calls
        if call.id not in recovered and (call.id in settled or call.name in idempotent)
    ]


def resumed_answers(
    calls: Sequence[ToolCall],
    recovered: Mapping[str, ToolResult],
    fresh: Mapping[str, ToolResult],
) -> dict[str, ToolResult]:
    """Each open call's answer when resuming, by call id in call order: its logged result, its
    result from running now (`fresh`), or "interrupted"."""
    return {
        call.id: recovered.get(call.id)
        or fresh.get(call.id)
        or _error(call, texts.INTERRUPTED.format(name=call.name))
        for call in calls
    }


def _error(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(call.id, call.name, text, is_error=True)
