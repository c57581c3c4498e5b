"""The repeat guard: a model making the same call turn after turn and getting the same answer.

Two ways a loop burns its turn budget without progress. A call that fails the same way every
time: after `Limits.max_repeats` turns in a row the run stops (`RepeatLimitExceeded`), since
the model is not learning from the error. A call that succeeds with the same result every time:
after `Limits.max_same_results` turns in a row its result is replaced by an error telling the
model it already has that result; one more such call stops the run.

"In a row" counts turns: a call (name and arguments, compared as canonical JSON) repeats when
the previous turn had it too, with the same outcome. Copies of a call within one reply count
once: a model that sends the same call three times in one reply has made one mistake, not
three. Any turn without the call starts its count again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from steadyloop.messages import ToolCall, ToolResult, canonical_arguments

__all__ = ["RepeatGuard", "TurnCheck"]

ALREADY_HAVE_TEXT = (
    "you already have this result: {name} was called with these same arguments {count} turns "
    "in a row and returned the same thing each time (see the earlier results). Use it to go on, "
    "or call with other arguments; calling it the same way again stops the run."
)

# (tool name, canonical arguments, failed, result text)
_Key = tuple[str, str, bool, str]


@dataclass(frozen=True, slots=True)
class TurnCheck:
    """What the guard makes of one turn: the results to append (in call order, repeated
    successes replaced) and, when the run must stop, why."""

    results: tuple[ToolResult, ...]
    stop: str | None = None


class RepeatGuard:
    """Counts, per call and outcome, how many turns in a row the model has made it."""

    __slots__ = ("_counts", "max_repeats", "max_same_results")

    def __init__(self, max_repeats: int, max_same_results: int | None) -> None:
        self.max_repeats = max_repeats
        self.max_same_results = max_same_results
        self._counts: dict[_Key, int] = {}

    def check_turn(self, answered: Sequence[tuple[ToolCall, ToolResult]]) -> TurnCheck:
        """Records one turn's answered calls, in call order."""
        previous = self._counts
        counts: dict[_Key, int] = {}
        results: list[ToolResult] = []
        stop: str | None = None
        for call, result in answered:
            if result.is_error is False and self.max_same_results is None:
                results.append(result)
                continue
            key = (call.name, canonical_arguments(call.arguments), result.is_error, result.content)
            count = counts.get(key) or previous.get(key, 0) + 1
            counts[key] = count
            if result.is_error:
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
        self._counts = counts
        return TurnCheck(tuple(results), stop)
