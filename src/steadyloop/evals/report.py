"""What an evaluation found: each attempt scored (`Attempt`), per case (`CaseResult`), in all
(`EvalReport`), and two reports side by side (`compare`); `steadyloop.evals.render` shows them
in a terminal.

A report is saved in the run log under the eval's name (`to_dict()`'s form) and read back with
`load_report`; the viewer and `steadyloop eval --compare` use it.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from steadyloop.errors import ConfigError
from steadyloop.evals.dataset import BadCase
from steadyloop.evals.render import (
    comparison_table,
    comparison_text,
    report_renderable,
    report_table,
    report_text,
    summary_lines,
)
from steadyloop.evals.scorers import Score
from steadyloop.messages import AssistantMessage, Message, ToolCall, Usage

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from steadyloop.store import RunLog

__all__ = [
    "Attempt",
    "CaseChange",
    "CaseResult",
    "Comparison",
    "EvalReport",
    "compare",
    "load_report",
]


@dataclass
class Attempt:
    """One run of one case, read from its log: what scorers get, and what a report holds.

    `status` is "answered", "limit", "error" or "paused"; `output` the answer as JSON (text, or
    a typed answer's JSON form); `error` the error or the limit; `latency` the seconds from the
    run's start to its end (None: unknown); `messages` the logged transcript (empty in a report
    read back from the log); `turns` the model calls; `scores` by scorer name.
    """

    case_id: str
    repeat: int
    run_id: str
    status: str
    output: Any = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency: float | None = None
    messages: tuple[Message, ...] = ()
    scores: dict[str, Score] = field(default_factory=dict)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of the run, in order."""
        return [c for m in self.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]

    @property
    def turns(self) -> int:
        return self.usage.requests

    @property
    def passed(self) -> bool:
        """The run answered and every score passed."""
        return self.status == "answered" and all(s.passed for s in self.scores.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "repeat": self.repeat,
            "run_id": self.run_id,
            "status": self.status,
            "output": self.output,
            "error": self.error,
            "passed": self.passed,
            "latency": self.latency,
            "turns": self.turns,
            "usage": self.usage.to_dict(),
            "scores": {name: score.to_dict() for name, score in self.scores.items()},
        }

    @classmethod
    def from_dict(cls, case_id: str, data: Mapping[str, Any]) -> Attempt:
        return cls(
            case_id, data["repeat"], data["run_id"], data["status"], data.get("output"),
            data.get("error"), Usage.from_dict(data.get("usage") or {}), data.get("latency"),
            scores={n: Score.from_dict(n, s) for n, s in (data.get("scores") or {}).items()},
        )  # fmt: skip


@dataclass
class CaseResult:
    """A case and its attempts, in repeat order."""

    id: str
    input: Any
    expected: Any
    metadata: Mapping[str, Any]
    attempts: list[Attempt]

    @property
    def pass_rate(self) -> float:
        """Passed attempts / attempts (0 with none)."""
        return sum(a.passed for a in self.attempts) / len(self.attempts) if self.attempts else 0.0

    @property
    def passed(self) -> bool:
        """Every attempt passed."""
        return bool(self.attempts) and all(a.passed for a in self.attempts)

    @property
    def scores(self) -> dict[str, float]:
        """The mean value per scorer over the attempts."""
        return _means(self.attempts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "input": self.input,
            "expected": self.expected,
            "metadata": dict(self.metadata),
            "pass_rate": self.pass_rate,
            "passed": self.passed,
            "scores": self.scores,
            "attempts": [attempt.to_dict() for attempt in self.attempts],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseResult:
        attempts = [Attempt.from_dict(str(data["id"]), a) for a in data.get("attempts", ())]
        return cls(
            str(data["id"]), data.get("input"), data.get("expected"), data.get("metadata") or {},
            attempts,
        )  # fmt: skip


@dataclass
class EvalReport:
    """An evaluation's results: its cases (dataset order), the bad lines, and figures over every
    attempt. `unfinished` attempts have no result yet (run the eval again)."""

    name: str
    agent: str
    dataset: str | None
    repeat: int
    scorers: list[str]
    cases: list[CaseResult]
    bad: list[BadCase] = field(default_factory=list)
    unfinished: int = 0

    @property
    def attempts(self) -> int:
        return sum(len(case.attempts) for case in self.cases)

    @property
    def passed(self) -> int:
        """Attempts that passed."""
        return sum(a.passed for a in self._all())

    @property
    def pass_rate(self) -> float:
        """Passed attempts / attempts (0 with none)."""
        return self.passed / self.attempts if self.attempts else 0.0

    @property
    def scores(self) -> dict[str, float]:
        """The mean value per scorer over every attempt (an error counts 0)."""
        means = _means(self._all())
        return {name: means.get(name, 0.0) for name in self.scorers}

    @property
    def errors(self) -> int:
        """Scores that could not be given."""
        return sum(s.error is not None for a in self._all() for s in a.scores.values())

    @property
    def statuses(self) -> dict[str, int]:
        """Attempts by their run's status."""
        return dict(Counter(a.status for a in self._all()))

    @property
    def cost_usd(self) -> float | None:
        """The sum of the known costs; None when none is known."""
        known = [a.usage.cost_usd for a in self._all() if a.usage.cost_usd is not None]
        return sum(known) if known else None

    @property
    def tokens(self) -> int | None:
        """Tokens sent and received, summed; None when unknown."""
        totals = [a.usage.total_tokens for a in self._all()]
        known = [t for t in totals if t is not None]
        return sum(known) if known else None

    @property
    def turns(self) -> float:
        """Mean model calls per attempt."""
        return sum(a.turns for a in self._all()) / self.attempts if self.attempts else 0.0

    @property
    def latency_p50(self) -> float | None:
        return _nearest_rank(self._latencies(), 50)

    @property
    def latency_p95(self) -> float | None:
        return _nearest_rank(self._latencies(), 95)

    def _all(self) -> list[Attempt]:
        return [a for case in self.cases for a in case.attempts]

    def _latencies(self) -> list[float]:
        return sorted(a.latency for a in self._all() if a.latency is not None)

    def summary(self) -> dict[str, Any]:
        """The figures of `to_dict()["summary"]`."""
        return {
            "cases": len(self.cases),
            "attempts": self.attempts,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "scores": self.scores,
            "errors": self.errors,
            "statuses": self.statuses,
            "unfinished": self.unfinished,
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
            "turns": self.turns,
            "latency_p50": self.latency_p50,
            "latency_p95": self.latency_p95,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "agent": self.agent,
            "dataset": self.dataset,
            "repeat": self.repeat,
            "scorers": list(self.scorers),
            "summary": self.summary(),
            "cases": [case.to_dict() for case in self.cases],
            "bad": [{"line": b.line, "reason": b.reason} for b in self.bad],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalReport:
        return cls(
            data["name"], data["agent"], data.get("dataset"), data["repeat"],
            list(data["scorers"]), [CaseResult.from_dict(c) for c in data["cases"]],
            [BadCase(b["line"], b["reason"]) for b in data.get("bad", ())],
            data.get("summary", {}).get("unfinished", 0),
        )  # fmt: skip

    def table(self) -> Table:
        """The terminal table: a row per case (pass rate, each scorer's mean, what failed)."""
        return report_table(self)

    def render(self) -> str:
        """The terminal table and a line per figure, as text."""
        return report_text(self)

    def summary_lines(self) -> list[str]:
        """A line per figure: the pass rate first, then each scorer's mean, errors, cost..."""
        return summary_lines(self)

    def __rich__(self) -> RenderableType:
        return report_renderable(self)


@dataclass(frozen=True, slots=True)
class CaseChange:
    """A case whose pass rate differs between two reports."""

    id: str
    base: CaseResult
    other: CaseResult

    @property
    def fixed(self) -> bool:
        return self.other.pass_rate > self.base.pass_rate

    @property
    def broken(self) -> bool:
        return self.other.pass_rate < self.base.pass_rate


@dataclass(frozen=True)
class Comparison:
    """Two reports side by side: the cases in both whose pass rate changed (in base order),
    and the ids only one of them has."""

    base: EvalReport
    other: EvalReport
    changed: list[CaseChange]
    added: list[str]
    removed: list[str]

    @property
    def fixed(self) -> list[str]:
        return [change.id for change in self.changed if change.fixed]

    @property
    def broken(self) -> list[str]:
        return [change.id for change in self.changed if change.broken]

    def to_dict(self) -> dict[str, Any]:
        def side(case: CaseResult) -> dict[str, Any]:
            return {"pass_rate": case.pass_rate, "passed": case.passed, "scores": case.scores}

        return {
            "base": self.base.name,
            "other": self.other.name,
            "summary": {"base": self.base.summary(), "other": self.other.summary()},
            "changed": [
                {"id": c.id, "base": side(c.base), "other": side(c.other)} for c in self.changed
            ],
            "added": self.added,
            "removed": self.removed,
        }

    def table(self) -> Table:
        """The terminal table: both reports' figures side by side, then each changed case."""
        return comparison_table(self)

    def render(self) -> str:
        """The side-by-side table as text, then the cases only one report has."""
        return comparison_text(self)

    def __rich__(self) -> RenderableType:
        return self.table()


def compare(base: EvalReport, other: EvalReport) -> Comparison:
    """`other` measured against `base`: which cases it fixed and which it broke."""
    theirs = {case.id: case for case in other.cases}
    ours = {case.id for case in base.cases}
    changed = [
        CaseChange(case.id, case, theirs[case.id])
        for case in base.cases
        if case.id in theirs and theirs[case.id].pass_rate != case.pass_rate
    ]
    added = [case.id for case in other.cases if case.id not in ours]
    removed = [case.id for case in base.cases if case.id not in theirs]
    return Comparison(base, other, changed, added, removed)


def load_report(name: str, *, store: RunLog | str | Path | None = None) -> EvalReport:
    """Evaluation `name`'s report as the run log saved it (`ConfigError` for an unknown name);
    `store` None is the command line's log."""
    from steadyloop.evals.run import open_log, reports_of

    log, opened = open_log(store, read_only=True)
    try:
        saved = reports_of(log).saved_report(name)
    finally:
        if opened:
            log.close()
    if saved is None:
        raise ConfigError(f"no eval {name!r} in {log.location}: run it with evaluate(name=...)")
    return EvalReport.from_dict(saved.report)


def _means(attempts: Sequence[Attempt]) -> dict[str, float]:
    values: dict[str, list[float]] = {}
    for attempt in attempts:
        for name, score in attempt.scores.items():
            values.setdefault(name, []).append(score.value)
    return {name: sum(v) / len(v) for name, v in values.items()}


def _nearest_rank(values: Sequence[float], percentile: int) -> float | None:
    if not values:
        return None
    return values[max(0, math.ceil(percentile / 100 * len(values)) - 1)]
