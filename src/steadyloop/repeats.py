"""The repeat guard: a model making the same call turn after turn and getting the same answer.

Two ways a loop burns its turn budget without progress. A call that fails the same way every
time: after `Limits.max_repeats` turns in a row the run stops (`RepeatLimitExceeded`), since
the model is not learning from the error. A call that succeeds with the same result every time:
after `Limits.max_same_results` turns in a row its result is replaced by an error telling the
model it already has that result; one more such call stops the run.

"In a row" counts turns: a call (name and arguments, compared as read from JSON) repeats when
the previous turn had it too, with the same outcome. Copies of a call within one reply count
once: a model that sends the same call three times in one reply has made one mistake, not
three. Any turn without the call starts its count again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from steadyloop import texts
from steadyloop.events import ToolCallFinished
from steadyloop.messages import ArgumentsError, ToolResult

__all__ = ["RepeatGuard", "TurnCheck"]

ALREADY_HAVE_TEXT = texts.ALREADY_HAVE


@dataclass(frozen=True, slots=True)
class TurnCheck:
    """What the guard makes of one turn: the results to append (in call order, repeated
    successes replaced) and, when the run must stop, why."""

    results: tuple[ToolResult, ...]
    stop: str | None = None


@dataclass(slots=True)
class _Seen:
    """A call answered in a turn: its arguments (as read), its result text, and how many
    turns in a row it has been made with that result."""

    arguments: Any
    content: str
    count: int


def _arguments(answered: ToolCallFinished) -> Any:
    """The call's arguments as a value to compare: as the dispatcher read them; for a call
    whose arguments are not a JSON object, the text the model sent."""
    if answered.arguments is not None:
        return answered.arguments
    try:
        return answered.call.parsed_arguments()
    except ArgumentsError:
        return answered.call.arguments


# Calls are filed by tool name, outcome and result length: only a call with the same three
# is compared in full, so a turn of new calls costs a dict lookup each.
_Key = tuple[str, bool, int]


class RepeatGuard:
    """Counts, per call and outcome, how many turns in a row the model has made it."""

    __slots__ = ("_previous", "max_repeats", "max_same_results")

    def __init__(self, max_repeats: int, max_same_results: int | None) -> None:
        self.max_repeats = max_repeats
        self.max_same_results = max_same_results
        self._previous: dict[_Key, list[_Seen]] = {}

    def check_turn(self, turn: Sequence[ToolCallFinished]) -> TurnCheck:
        """Records one turn's answered calls, in call order."""
        current: dict[_Key, list[_Seen]] = {}
        results: list[ToolResult] = []
        stop: str | None = None
        for answered in turn:
            call, result = answered.call, answered.result
            failed = result.is_error
            if not failed and self.max_same_results is None:
                results.append(result)
                continue
            count = self._count(current, answered)
            if failed:
                if count >= self.max_repeats and stop is None:
                    stop = (
                        f"repeat limit reached: {call.name} failed the same way {count} times "
                        f"in a row: {result.content[:200]}"
                    )
            elif self.max_same_results is not None and count >= self.max_same_results:
                if count > self.max_same_results and stop is None:
                    stop = (
                        f"repeat limit reached: {call.name} returned the same result for the "
                        f"same arguments {count} times in a row, after the model was told it "
                        "had it"
                    )
                text = ALREADY_HAVE_TEXT.format(name=call.name, count=count)
                result = replace(result, content=text, is_error=True, images=())
            results.append(result)
        self._previous = current
        return TurnCheck(tuple(results), stop)

    def _count(self, current: dict[_Key, list[_Seen]], answered: ToolCallFinished) -> int:
        """How many turns in a row, this one included, have had this call with this result;
        a copy of a call already answered in this turn counts once."""
        result = answered.result
        key = (answered.call.name, result.is_error, len(result.content))
        arguments, content = _arguments(answered), result.content
        seen_now = current.setdefault(key, [])
        for seen in seen_now:
            if seen.content == content and seen.arguments == arguments:
                return seen.count
        count = 1
        for seen in self._previous.get(key, ()):
            if seen.content == content and seen.arguments == arguments:
                count = seen.count + 1
                break
        seen_now.append(_Seen(arguments, content, count))
        return count
