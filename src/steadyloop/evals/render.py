"""An evaluation's report and a comparison of two, shown in a terminal: rich tables, the same as
plain text, and a line per figure (`EvalReport.render()`, `steadyloop eval`). Unknown figures
read "unknown" or "—", never zero."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from steadyloop.evals.report import CaseResult, Comparison, EvalReport

__all__ = [
    "comparison_table",
    "comparison_text",
    "percent",
    "report_renderable",
    "report_table",
    "report_text",
    "summary_lines",
]


def report_table(report: EvalReport) -> Table:
    """A row per case: its pass rate, each scorer's mean, and what failed first."""
    from rich.table import Table

    table = Table(title=f"eval {report.name}: {percent(report.pass_rate)} passed")
    table.add_column("case")
    table.add_column("pass", justify="right")
    for name in report.scorers:
        table.add_column(name, justify="right")
    table.add_column("why not")
    for case in report.cases:
        why = _why_not(case)
        cells = [percent(case.scores.get(name)) for name in report.scorers]
        table.add_row(case.id, percent(case.pass_rate), *cells, why)
    return table


def report_text(report: EvalReport) -> str:
    """The table and a line per figure, as text."""
    return _text(report_table(report)) + "".join(line + "\n" for line in summary_lines(report))


def report_renderable(report: EvalReport) -> RenderableType:
    """The table and a line per figure, for a rich console."""
    from rich.console import Group

    return Group(report_table(report), "\n".join(summary_lines(report)))


def summary_lines(report: EvalReport) -> list[str]:
    """A line per figure: the pass rate first, then each scorer's mean, errors, cost..."""
    pairs = [
        ("pass rate", f"{percent(report.pass_rate)} ({report.passed} of {report.attempts} "
         f"attempts, {len(report.cases)} cases, {report.repeat} each)"),
        *((name, percent(mean)) for name, mean in report.scores.items()),
        ("errors", str(report.errors)),
        ("cost", _money(report.cost_usd)),
        ("tokens", _count(report.tokens)),
        ("turns", f"{report.turns:.1f} per attempt"),
        ("latency", f"p50 {_seconds(report.latency_p50)}, p95 {_seconds(report.latency_p95)}"),
    ]  # fmt: skip
    if report.bad:
        pairs.append(("bad lines", f"{len(report.bad)} skipped"))
    if report.unfinished:
        pairs.append(("unfinished", f"{report.unfinished}: run the eval again to finish them"))
    width = max(len(label) for label, _ in pairs)
    return [f"{label:<{width}}  {value}" for label, value in pairs]


def comparison_table(comparison: Comparison) -> Table:
    """Both reports' figures side by side, then a row per case that was fixed or broken."""
    from rich.table import Table

    base, other = comparison.base, comparison.other
    table = Table(title=f"{base.name} → {other.name}")
    table.add_column("")
    table.add_column(base.name, justify="right")
    table.add_column(other.name, justify="right")
    table.add_row("pass rate", percent(base.pass_rate), percent(other.pass_rate))
    for name in dict.fromkeys([*base.scorers, *other.scorers]):
        table.add_row(name, percent(base.scores.get(name)), percent(other.scores.get(name)))
    table.add_row("cost", _money(base.cost_usd), _money(other.cost_usd))
    table.add_row("tokens", _count(base.tokens), _count(other.tokens))
    table.add_row("turns", f"{base.turns:.1f}", f"{other.turns:.1f}")
    for label, a, b in (
        ("latency p50", base.latency_p50, other.latency_p50),
        ("latency p95", base.latency_p95, other.latency_p95),
    ):
        table.add_row(label, _seconds(a), _seconds(b))
    for change in comparison.changed:
        word = "fixed" if change.fixed else "broken"
        table.add_row(
            f"{word}: {change.id}", percent(change.base.pass_rate),
            percent(change.other.pass_rate),
        )  # fmt: skip
    return table


def comparison_text(comparison: Comparison) -> str:
    """The side-by-side table as text, then the cases only one of the reports has."""
    text = _text(comparison_table(comparison))
    if comparison.added:
        text += f"only in {comparison.other.name}: {', '.join(comparison.added)}\n"
    if comparison.removed:
        text += f"only in {comparison.base.name}: {', '.join(comparison.removed)}\n"
    return text


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _why_not(case: CaseResult) -> str:
    """What failed first in `case`: an attempt that did not answer, or a scorer that failed."""
    for attempt in case.attempts:
        if attempt.status != "answered":
            return _short(f"#{attempt.repeat} {attempt.status}: {attempt.error or ''}".strip())
        for score in attempt.scores.values():
            if not score.passed:
                return _short(f"#{attempt.repeat} {score.name}: {score.error or score.reason}")
    return ""


def _short(text: str, most: int = 60) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _text(renderable: Any) -> str:
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=120, no_color=True, color_system=None).print(renderable)
    return buffer.getvalue()


def _money(usd: float | None) -> str:
    return "unknown" if usd is None else f"${usd:.4f}"


def _count(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"
