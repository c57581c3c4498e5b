"""Evaluations: an agent over a dataset of cases, each attempt scored, on the batch engine.

    report = evaluate("support.agent:make_agent", "cases.jsonl",
                      [Contains(), ToolCalled("search_tickets"), Judge("openai:gpt-4.1", "...")],
                      name="support-v2", store="runs.db", repeat=3)
    report.pass_rate, report.scores["contains"], report.cost_usd, report.latency_p95
    compare(load_report("support-v1", store="runs.db"), report).broken

Each attempt is an ordinary logged run (`"NAME:CASE"`, `"NAME:CASE#2"`...), so one killed mid-way
resumes when the eval runs again and a finished eval re-run asks no model; the report is saved
in the run log under the eval's name (`load_report`, `steadyloop ui` at /evals).
"""

from __future__ import annotations

from steadyloop.evals.dataset import BadCase, Case, Dataset
from steadyloop.evals.judge import Judge, Verdict
from steadyloop.evals.report import (
    Attempt,
    CaseChange,
    CaseResult,
    Comparison,
    EvalReport,
    compare,
    load_report,
)
from steadyloop.evals.run import evaluate
from steadyloop.evals.scorers import (
    Contains,
    ExactMatch,
    JSONEqual,
    MaxCost,
    MaxLatency,
    MaxTokens,
    MaxTurns,
    NoToolErrors,
    Regex,
    Score,
    Scorer,
    ToolCalled,
    scorer,
)

__all__ = [
    "Attempt",
    "BadCase",
    "Case",
    "CaseChange",
    "CaseResult",
    "Comparison",
    "Contains",
    "Dataset",
    "EvalReport",
    "ExactMatch",
    "JSONEqual",
    "Judge",
    "MaxCost",
    "MaxLatency",
    "MaxTokens",
    "MaxTurns",
    "NoToolErrors",
    "Regex",
    "Score",
    "Scorer",
    "ToolCalled",
    "Verdict",
    "compare",
    "evaluate",
    "load_report",
    "scorer",
]
