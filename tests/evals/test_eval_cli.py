"""`steadyloop eval`: the table and the figures, JSON, a comparison, and the exit codes CI
reads (1 below --min-pass-rate, after the report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals import agents
from support.cli import run_cli

CASES = Path(__file__).with_name("cases.jsonl")


def test_a_pass_rate_below_the_bar_exits_1_after_printing_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "runs.db")

    code, out, err = run_cli(
        capsys, "eval", str(CASES), "--agent", "evals.agents:make_plain_agent",
        "--scorer", "exact_match", "--store", store, "--min-pass-rate", "0.5",
    )  # fmt: skip

    assert code == 1
    assert "pass rate" in out
    assert "33.3%" in out
    assert "pass rate 33.3% is below the bar of 50.0%" in err

    code, out, err = run_cli(
        capsys, "eval", str(CASES), "--agent", "evals.agents:make_agent",
        "--scorer", "exact_match", "--store", store, "--min-pass-rate", "0.5",
    )  # fmt: skip

    assert (code, err) == (0, "")
    assert "100.0%" in out


def test_json_with_a_comparison_and_a_judge_from_a_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "runs.db")
    run_cli(capsys, "eval", str(CASES), "--agent", "evals.agents:make_plain_agent",
            "--scorer", "exact_match", "--store", store, "--name", "old")  # fmt: skip

    code, out, _ = run_cli(
        capsys, "eval", str(CASES), "--agent", "evals.agents:make_agent", "--scorer",
        "exact_match", "--scorer", "evals.agents:judge", "--scorer", "tool_called:lookup",
        "--store", store, "--compare", "old", "--json",
    )  # fmt: skip

    assert code == 0
    document = json.loads(out)
    assert document["name"] == "cases-make_agent"
    assert document["scorers"] == ["exact_match", "judge", "tool_called:lookup"]
    assert document["summary"]["pass_rate"] == 1.0
    assert document["compare"]["base"] == "old"
    assert [c["id"] for c in document["compare"]["changed"]] == ["es", "3"]
    assert agents.CALLS["judge"] == 3


@pytest.mark.parametrize(
    ("scorer", "message"),
    [("bogus", "unknown scorer 'bogus'"), ("max_turns:many", "needs a number"),
     ("evals.agents:nothing", "evals.agents has no nothing")],
)  # fmt: skip
def test_an_unknown_scorer_is_one_line_and_nothing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scorer: str, message: str
) -> None:
    code, _out, err = run_cli(capsys, "eval", str(CASES), "--agent", "evals.agents:make_agent",
                             "--scorer", scorer, "--store", str(tmp_path / "r.db"))  # fmt: skip

    assert code == 1
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert agents.CALLS == {}


def test_bad_lines_go_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text('{"id": 1, "input": "two plus two", "expected": "4"}\n{"id": 2}\n')

    code, _out, err = run_cli(capsys, "eval", str(dataset), "--agent", "evals.agents:make_agent",
                             "--store", str(tmp_path / "r.db"))  # fmt: skip

    assert code == 0
    assert f'skipped {dataset} line 2: case 2: no "input"' in err
