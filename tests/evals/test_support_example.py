"""The shipped example: an eval of the support-desk agent on its dataset, offline."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from steadyloop.evals import load_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support_eval.py"


def test_the_support_eval_example_passes_offline_and_keeps_its_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "support.db"
    main = runpy.run_path(str(EXAMPLE))["main"]

    assert main(["--store", str(store)]) == 0

    assert "pass rate            100.0% (5 of 5 attempts" in capsys.readouterr().out
    report = load_report("support-offline", store=store)
    assert [case.id for case in report.cases] == [
        "open-refunds", "all-refunds", "login", "invoice", "count-open",
    ]  # fmt: skip
    assert report.cases[0].attempts[0].output == (
        "Tickets: T-103 (Refund after cancellation), T-101 (Refund for double charge)"
    )
