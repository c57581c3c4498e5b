"""Scorers: how an attempt's answer and run are judged.

A scorer has a `name` and `score(case, attempt)`, sync or async, returning a `Score`, a bool
(1.0 or 0.0) or a number in [0, 1] (passed when at least the scorer's `threshold`). A plain
function `(case, attempt)` is a scorer named after it; `@scorer(name=..., threshold=...)` names
it or sets its threshold; subclass `Scorer` for your own classes.

Built-ins read the answer (`ExactMatch`, `Contains`, `Regex`, `JSONEqual`), the run's logged
transcript (`ToolCalled`, `NoToolErrors`, `MaxTurns`) or its figures (`MaxCost`, `MaxLatency`,
`MaxTokens`). What cannot be scored (no expected answer, an unknown cost) is an *error*, never a
silent pass; so is a scorer that raises or returns anything else (`score_attempt`).
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from steadyloop.errors import ConfigError
from steadyloop.messages import ToolResult

if TYPE_CHECKING:
    from steadyloop.evals.dataset import Case
    from steadyloop.evals.report import Attempt

__all__ = [
    "Contains",
    "ExactMatch",
    "JSONEqual",
    "MaxCost",
    "MaxLatency",
    "MaxTokens",
    "MaxTurns",
    "NoToolErrors",
    "Regex",
    "Score",
    "Scorer",
    "ToolCalled",
    "as_scorers",
    "score_attempt",
    "scorer",
]

Outcome = Any  # Score | bool | float, or an awaitable of one


@dataclass(frozen=True, slots=True)
class Score:
    """One scorer's verdict on one attempt: `value` in [0, 1], `passed`, and why (`reason`).

    The eval fills in `name` (the scorer's), `error` (what kept it from scoring: the scorer
    raised, or the case had nothing to score against) and `run_id` (the judge's run).
    """

    value: float
    passed: bool
    reason: str = ""
    name: str = ""
    error: str | None = None
    run_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "passed": self.passed,
            "reason": self.reason,
            "error": self.error,
            "run_id": self.run_id,
        }

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> Score:
        return cls(
            float(data["value"]), bool(data["passed"]), data.get("reason") or "", name,
            data.get("error"), data.get("run_id"),
        )  # fmt: skip


def failed(reason: str) -> Score:
    """A score that could not be given: an error, never a pass."""
    return Score(0.0, False, reason, error=reason)


class Scorer:
    """A scorer: subclass it, set `name` (and `threshold` for numbers), define `score`."""

    name: str = "scorer"
    threshold: float = 0.5

    def score(self, case: Case, attempt: Attempt) -> Outcome:
        """A `Score`, a bool or a number in [0, 1] (or an awaitable of one)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class FunctionScorer(Scorer):
    """A function `(case, attempt)` as a scorer; calling it still calls the function."""

    def __init__(self, fn: Callable[..., Outcome], name: str | None, threshold: float) -> None:
        self.fn = fn
        self.name = name or str(getattr(fn, "__name__", "scorer"))
        self.threshold = threshold

    def score(self, case: Case, attempt: Attempt) -> Outcome:
        return self.fn(case, attempt)

    def __call__(self, case: Case, attempt: Attempt) -> Outcome:
        return self.fn(case, attempt)


@overload
def scorer(fn: Callable[..., Outcome], /) -> FunctionScorer: ...
@overload
def scorer(
    *, name: str | None = None, threshold: float = 0.5
) -> Callable[[Callable[..., Outcome]], FunctionScorer]: ...
def scorer(
    fn: Callable[..., Outcome] | None = None, /, *, name: str | None = None, threshold: float = 0.5
) -> FunctionScorer | Callable[[Callable[..., Outcome]], FunctionScorer]:
    """Makes `fn(case, attempt)` a scorer: `@scorer`, or `@scorer(name=..., threshold=...)`."""
    if not 0 <= threshold <= 1:
        raise ConfigError(f"a scorer's threshold is from 0 to 1, got {threshold}")
    if fn is not None:
        return FunctionScorer(fn, name, threshold)
    return lambda function: FunctionScorer(function, name, threshold)


def as_scorers(items: Sequence[Scorer | Callable[..., Outcome]]) -> list[Scorer]:
    """The eval's scorers (plain functions wrapped); `ConfigError` for anything else or two
    with one name, before anything runs."""
    scorers = [
        item if isinstance(item, Scorer) else _wrap(item) for item in items
    ]  # fmt: skip
    names = [s.name for s in scorers]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigError(
            f"two scorers are named {', '.join(twice)}: give one another name (name=...)"
        )
    return scorers


def _wrap(item: Any) -> Scorer:
    if not callable(item):
        raise ConfigError(
            f"a scorer is a Scorer or a function (case, attempt), got {type(item).__name__}"
        )
    return FunctionScorer(item, None, 0.5)


def score_attempt(scorer: Scorer, case: Case, attempt: Attempt) -> Score | Awaitable[Score]:
    """`scorer`'s score of `attempt`, named: at once from a sync scorer, or an awaitable of it
    from an async one (a judge). Whatever goes wrong (it raises, returns NaN, 1.5, None or
    text) is that score's error, never the eval's."""
    try:
        outcome = scorer.score(case, attempt)
        # A `Score` (the usual outcome) is not awaitable: no need to ask the slower way.
        if not isinstance(outcome, Score) and inspect.isawaitable(outcome):
            return _finish(scorer, outcome)
        return _named(_as_score(outcome, scorer.threshold), scorer.name)
    except Exception as exc:
        return _named(failed(f"{type(exc).__name__}: {exc}"), scorer.name)


async def _finish(scorer: Scorer, outcome: Awaitable[Any]) -> Score:
    try:
        score = _as_score(await outcome, scorer.threshold)
    except Exception as exc:
        score = failed(f"{type(exc).__name__}: {exc}")
    return _named(score, scorer.name)


def _named(score: Score, name: str) -> Score:
    return Score(score.value, score.passed, score.reason, name, score.error, score.run_id)


def _as_score(outcome: Any, threshold: float) -> Score:
    if isinstance(outcome, Score):
        _check_value(outcome.value, outcome)
        return outcome
    if isinstance(outcome, bool):
        return Score(float(outcome), outcome)
    if isinstance(outcome, int | float):
        _check_value(outcome, outcome)
        return Score(float(outcome), outcome >= threshold)
    raise TypeError(f"a scorer returns a Score, a bool or a number from 0 to 1, got {outcome!r}")


def _check_value(value: Any, outcome: Any) -> None:
    if not isinstance(value, int | float) or math.isnan(value) or not 0 <= value <= 1:
        raise ValueError(f"a score is a number from 0 to 1, got {outcome!r}")


# -- the answer ----------------------------------------------------------------------------


def answer_text(output: Any) -> str:
    """The answer as text: a text answer as it is, a typed one as its JSON."""
    if output is None:
        return ""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _expected(given: Any, case: Case, scorer: str) -> Any:
    """What a scorer compares with: its own, else the case's (`ValueError` when neither)."""
    if given is not None:
        return given
    if case.expected is None:
        raise _NothingExpected(f"case {case.id} has no expected answer for {scorer}")
    return case.expected


class _NothingExpected(Exception):
    """A case with no expected answer for a scorer that needs one."""


def _scored(check: Callable[[], Score]) -> Score:
    try:
        return check()
    except _NothingExpected as exc:
        return failed(str(exc))


class ExactMatch(Scorer):
    """The answer text equals the expected one, whitespace at both ends aside."""

    def __init__(
        self, expected: Any = None, *, case_sensitive: bool = True, name: str = "exact_match"
    ) -> None:
        self.expected, self.case_sensitive, self.name = expected, case_sensitive, name

    def score(self, case: Case, attempt: Attempt) -> Score:
        def check() -> Score:
            want = answer_text(_expected(self.expected, case, self.name)).strip()
            got = answer_text(attempt.output).strip()
            same = got == want if self.case_sensitive else got.casefold() == want.casefold()
            return Score(float(same), same, "" if same else f"expected {want!r}, got {got!r}")

        return _scored(check)


class Contains(Scorer):
    """The answer contains the text, or each text of a list; the value is the share found."""

    def __init__(
        self,
        text: str | Sequence[str] | None = None,
        *,
        case_sensitive: bool = False,
        name: str = "contains",
    ) -> None:
        self.text, self.case_sensitive, self.name = text, case_sensitive, name

    def score(self, case: Case, attempt: Attempt) -> Score:
        def check() -> Score:
            want = _expected(self.text, case, self.name)
            texts = [want] if isinstance(want, str) else list(want)
            if not texts or not all(isinstance(t, str) for t in texts):
                raise TypeError(f"{self.name} looks for text or a list of texts, got {want!r}")
            got = answer_text(attempt.output)
            fold = (lambda s: s) if self.case_sensitive else str.casefold
            missing = [t for t in texts if fold(t) not in fold(got)]
            share = (len(texts) - len(missing)) / len(texts)
            reason = f"missing {', '.join(map(repr, missing))}" if missing else ""
            return Score(share, not missing, reason)

        return _scored(check)


class Regex(Scorer):
    """`re.search(pattern, answer)` finds a match."""

    def __init__(self, pattern: str | re.Pattern[str], *, flags: int = 0, name: str = "regex"):
        self.pattern = re.compile(pattern, flags) if isinstance(pattern, str) else pattern
        self.name = name

    def score(self, case: Case, attempt: Attempt) -> Score:
        found = self.pattern.search(answer_text(attempt.output)) is not None
        return Score(float(found), found, "" if found else f"no match for {self.pattern.pattern!r}")


class JSONEqual(Scorer):
    """The answer as JSON equals the expected JSON; the value is the share of the expected
    object's top-level fields that match (1 or 0 for anything but an object)."""

    def __init__(self, expected: Any = None, *, name: str = "json_equal") -> None:
        self.expected, self.name = expected, name

    def score(self, case: Case, attempt: Attempt) -> Score:
        def check() -> Score:
            want = _expected(self.expected, case, self.name)
            got = attempt.output
            if isinstance(got, str):
                try:
                    got = json.loads(got)
                except ValueError:
                    return Score(0.0, False, "the answer is not JSON")
            if got == want:
                return Score(1.0, True)
            if isinstance(want, Mapping) and want and isinstance(got, Mapping):
                wrong = [key for key in want if key not in got or got[key] != want[key]]
                extra = [key for key in got if key not in want]
                share = (len(want) - len(wrong)) / len(want)
                words = [f"fields differ: {', '.join(wrong)}"] if wrong else []
                words += [f"fields not expected: {', '.join(extra)}"] if extra else []
                return Score(share, False, "; ".join(words))
            return Score(0.0, False, f"expected {json.dumps(want)}, got {json.dumps(got)}")

        return _scored(check)


# -- the transcript ------------------------------------------------------------------------


class ToolCalled(Scorer):
    """At least one call of `tool` whose arguments match `args`: a mapping matched as a subset
    (a compiled `re.Pattern` value is searched in the argument), or `fn(arguments) -> bool`."""

    def __init__(
        self,
        tool: str,
        args: Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None = None,
        *,
        name: str | None = None,
    ) -> None:
        self.tool, self.args = tool, args
        self.name = name or f"tool_called:{tool}"

    def score(self, case: Case, attempt: Attempt) -> Score:
        calls = [call for call in attempt.tool_calls if call.name == self.tool]
        for call in calls:
            if self._matches(call.parsed_arguments()):
                return Score(1.0, True)
        if calls:
            shown = "; ".join(json.dumps(call.parsed_arguments()) for call in calls[:3])
            return Score(0.0, False, f"{self.tool} was called with {shown}")
        names = sorted({call.name for call in attempt.tool_calls})
        called = f"the tools called were {', '.join(names)}" if names else "no tool was called"
        return Score(0.0, False, f"{self.tool} was not called; {called}")

    def _matches(self, arguments: Any) -> bool:
        if self.args is None:
            return True
        if callable(self.args):
            return bool(self.args(arguments))
        if not isinstance(arguments, Mapping):
            return False
        for key, want in self.args.items():
            if key not in arguments:
                return False
            got = arguments[key]
            if isinstance(want, re.Pattern):
                if not isinstance(got, str) or want.search(got) is None:
                    return False
            elif got != want:
                return False
        return True


class NoToolErrors(Scorer):
    """No tool result of the run is an error (an unknown tool, bad arguments, `ToolError`, a
    timeout...)."""

    def __init__(self, *, name: str = "no_tool_errors") -> None:
        self.name = name

    def score(self, case: Case, attempt: Attempt) -> Score:
        errors = [m for m in attempt.messages if isinstance(m, ToolResult) and m.is_error]
        if not errors:
            return Score(1.0, True)
        first = errors[0]
        text = first.content if len(first.content) <= 200 else first.content[:200] + "…"
        return Score(0.0, False, f"{len(errors)} failed: {first.name} ({first.call_id}): {text}")


class MaxTurns(Scorer):
    """At most `n` model calls."""

    def __init__(self, n: int, *, name: str = "max_turns") -> None:
        self.n, self.name = n, name

    def score(self, case: Case, attempt: Attempt) -> Score:
        ok = attempt.turns <= self.n
        return Score(float(ok), ok, "" if ok else f"{attempt.turns} model calls, over {self.n}")


class MaxCost(Scorer):
    """The run cost at most `usd` dollars (an unknown cost is an error)."""

    def __init__(self, usd: float, *, name: str = "max_cost") -> None:
        self.usd, self.name = usd, name

    def score(self, case: Case, attempt: Attempt) -> Score:
        cost = attempt.usage.cost_usd
        if cost is None:
            return failed("the cost is unknown (the model has no price)")
        ok = cost <= self.usd
        return Score(float(ok), ok, "" if ok else f"cost ${cost:.4f}, over ${self.usd}")


class MaxLatency(Scorer):
    """The run took at most `seconds`, from its start to its end in the log."""

    def __init__(self, seconds: float, *, name: str = "max_latency") -> None:
        self.seconds, self.name = seconds, name

    def score(self, case: Case, attempt: Attempt) -> Score:
        took = attempt.latency
        if took is None:
            return failed("the latency is unknown (the run did not finish)")
        ok = took <= self.seconds
        return Score(float(ok), ok, "" if ok else f"took {took:.2f} s, over {self.seconds} s")


class MaxTokens(Scorer):
    """At most `n` tokens sent and received (unknown counts are an error)."""

    def __init__(self, n: int, *, name: str = "max_tokens") -> None:
        self.n, self.name = n, name

    def score(self, case: Case, attempt: Attempt) -> Score:
        usage = attempt.usage
        total = usage.total_tokens
        if total is None or not usage.tokens_known:
            return failed("the token count is unknown (the server reported no usage)")
        ok = total <= self.n
        return Score(float(ok), ok, "" if ok else f"{total} tokens, over {self.n}")
