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
from steadyloop.messages import ArgumentsError, ToolCall, ToolResult

__all__ = ["RepeatGuard", "TurnCheck"]

ALREADY_HAVE_TEXT = texts.ALREADY_HAVE


@dataclass(slots=True)  # not frozen: one a turn, and a frozen one is slower to make
class TurnCheck:
    """What the guard makes of one turn: the results to append (in call order, repeated
    successes replaced) and, when the run must stop, why."""

    results: list[ToolResult]
    stop: str | None = None


def _unread_arguments(call: ToolCall) -> Any:
    """The arguments of a call the dispatcher did not read, as a value to compare: as read
    from JSON; for text that is not a JSON object, the text the model sent."""
    try:
        return call.parsed_arguments()
    except ArgumentsError:
        return call.arguments


# Calls are filed by tool name, outcome and result length: only a call with the same three
# is compared in full, so a turn of new calls costs a dict lookup each. Each is filed as
# (arguments, result text, turns in a row it has been made with that result).
_Key = tuple[str, bool, int]
_Seen = tuple[Any, str, int]


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
        same_results = self.max_same_results
        for answered in turn:
            call, result = answered.call, answered.result
            failed = result.is_error
            if not failed and same_results is None:
                results.append(result)
                continue
            count = self._count(current, answered)
            if failed:
                if count >= self.max_repeats and stop is None:
                    stop = (
                        f"repeat limit reached: {call.name} failed the same way {count} times "
                        f"in a row: {result.content[:200]}"
                    )
            elif same_results is not None and count >= same_results:
                if count > same_results and stop is None:
                    stop = (
                        f"repeat limit reached: {call.name} returned the same result for the "
                        f"same arguments {count} times in a row, after the model was told it "
                        "had it"
                    )
                text = ALREADY_HAVE_TEXT.format(name=call.name, count=count)
                result = replace(result, content=text, is_error=True, images=())
            results.append(result)
        self._previous = current
        return TurnCheck(results, stop)

    def _count(self, current: dict[_Key, list[_Seen]], answered: ToolCallFinished) -> int:
        """How many turns in a row, this one included, have had this call with this result;
        a copy of a call already answered in this turn counts once."""
        result = answered.result
        content = result.content
        key = (answered.call.name, result.is_error, len(content))
        arguments = answered.arguments  # as the dispatcher read them
        if arguments is None:
            arguments = _unread_arguments(answered.call)
        seen_now = current.get(key)
        if seen_now is None:
            seen_now = current[key] = []
        for seen_arguments, seen_content, count in seen_now:
            if seen_content == content and seen_arguments == arguments:
                return count
        count = 1
        for seen_arguments, seen_content, seen_count in self._previous.get(key, ()):
            if seen_content == content and seen_arguments == arguments:
                count = seen_count + 1
                break
        seen_now.append((arguments, content, count))
        return count
