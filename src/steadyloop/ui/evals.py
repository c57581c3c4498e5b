"""What the viewer shows of evaluations: every eval report the run log keeps, and one of them.

The reports are the ones `steadyloop.evals.evaluate` saved (`EvalReport.to_dict()`); each attempt
names its run, which the viewer opens like any other. Read-only, like the rest of the viewer.
"""

from __future__ import annotations

from typing import Any

from steadyloop.errors import ConfigError
from steadyloop.store import RunLog
from steadyloop.store.base import SavedReport, SqlStore

__all__ = ["eval_list", "eval_page"]


def eval_list(store: RunLog) -> dict[str, Any]:
    """Every eval of the log, the most recently run first: name, when, agent, cases, attempts,
    pass rate and cost."""
    saved = store.saved_reports() if isinstance(store, SqlStore) else []
    return {"evals": [_row(report) for report in saved]}


def eval_page(store: RunLog, name: str) -> dict[str, Any]:
    """Eval `name`'s report (`EvalReport.to_dict()`) and when it ran; `ConfigError` when the log
    has none by that name."""
    saved = store.saved_report(name) if isinstance(store, SqlStore) else None
    if saved is None:
        raise ConfigError(f"no eval {name!r} in {store.location}")
    return {**saved.report, "created": saved.created, "updated": saved.updated}


def _row(saved: SavedReport) -> dict[str, Any]:
    summary = saved.report.get("summary", {})
    return {
        "name": saved.name,
        "created": saved.created,
        "updated": saved.updated,
        "agent": saved.agent,
        "cases": summary.get("cases"),
        "attempts": summary.get("attempts"),
        "pass_rate": summary.get("pass_rate"),
        "cost": summary.get("cost_usd"),
    }
