"""`RunStart`: where a run starts, the one start state every run is built from.

A fresh run starts from a prompt after a history; a run that goes on starts from the point it
stopped at, read from its log (`steadyloop.resume`) or held by a paused result. Either way the
loop gets the same thing: the transcript so far, what it has spent, what finished, and the
decisions for the calls it waits on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from steadyloop.approvals import Approve, Decision, Defer, Edit
from steadyloop.messages import Message, ToolCall, ToolResult, Usage, UserMessage

if TYPE_CHECKING:
    from steadyloop.tools import Tool

__all__ = ["RunStart"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart:
    """Where a run starts: a prompt after a history (`fresh`), or the point a run stopped at.

    `messages` is the history, or the stopped run's whole transcript; `turns_used` and `usage`
    what it has spent (`usage_by_model`: split by the model that answered). `recovered` (None
    for a fresh run) holds the results of calls that finished (logged, or held back by a
    pause) but may not be in the transcript yet, and
    `decisions` those made for the calls it waits on. `prompt` is set for a stopped run whose
    process died before it logged the prompt as a message (the run's row has it): the run goes
    on by appending it, as it was about to. `cut_short`: the calls of the run's last reply that
    the stop left unanswered and that wait on no decision, each with the decision the log holds
    for it (None when none was logged).
    """

    run_id: str | None = None
    prompt: UserMessage | None = None
    messages: tuple[Message, ...] = ()
    turns_used: int = 0
    usage: Usage = field(default_factory=Usage)
    usage_by_model: Mapping[str, Usage] = field(default_factory=dict)
    recovered: Mapping[str, ToolResult] | None = None
    decisions: Mapping[str, Decision] = field(default_factory=dict)
    cut_short: tuple[tuple[ToolCall, Decision | None], ...] = ()

    @classmethod
    def fresh(
        cls, prompt: UserMessage, history: Sequence[Message] = (), run_id: str | None = None
    ) -> RunStart:
        """A new run of `prompt` after `history`, named `run_id` in its log."""
        return cls(run_id=run_id, prompt=prompt, messages=tuple(history))

    def decisions_for(self, tools: Sequence[Tool]) -> dict[str, Decision]:
        """The decisions the run applies: `decisions`, and for each call cut short the one it
        had. A denial is given again (nothing runs). An approval or edit is given again only
        when the tool is idempotent: otherwise the call may have taken effect, and the run
        answers it "interrupted" rather than run it on a second approval. A call its tool gates
        with no decision logged never ran (a decision to run is committed before the call
        starts), so it waits for a decision again."""
        decided = dict(self.decisions)
        by_name = {tool.name: tool for tool in tools} if self.cut_short else {}
        for call, logged in self.cut_short:
            tool = by_name.get(call.name)
            if call.id in decided or tool is None:
                continue
            if isinstance(logged, Approve | Edit):
                if tool.idempotent:
                    decided[call.id] = logged
            elif logged is not None:
                decided[call.id] = logged
            elif _gated(tool, call):
                decided[call.id] = Defer()
        return decided


def _gated(tool: Tool, call: ToolCall) -> bool:
    """Whether the call needs a decision before it runs (arguments that do not bind are
    answered without one)."""
    try:
        arguments = dict(call.parsed_arguments())
        tool.bind(arguments)
    except Exception:
        return False
    return tool.needs_approval(arguments)
