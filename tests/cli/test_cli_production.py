"""The command line's typed answers (`--output`), approvals (`--approve`, `resume --approve`)
and images (`--image`)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from steadyloop.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)
    return tmp_path / "home"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def models_file(tmp_path: Path) -> Path:
    path = tmp_path / "answers.py"
    path.write_text(
        textwrap.dedent(
            """
            from pydantic import BaseModel

            class Refund(BaseModel):
                order_id: str
                amount: float
            """
        )
    )
    return path


def test_output_prints_the_typed_answer_as_json(
    capsys: pytest.CaptureFixture[str], models_file: Path
) -> None:
    code, out, _ = run_cli(
        capsys, "run", "--model", "test", "--output", f"{models_file}:Refund", "refund A1"
    )
    assert code == 0
    assert json.loads(out) == {"order_id": "example", "amount": 1.0}
    code, out, _ = run_cli(
        capsys, "run", "--model", "test", "--json", "--output", f"{models_file}:Refund", "x"
    )
    assert code == 0
    assert json.loads(out)["output"] == {"order_id": "example", "amount": 1.0}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{file}", "expected FILE.py:NAME"),
        ("{file}:Nope", "defines no 'Nope'"),
        ("missing.py:Refund", "file not found: missing.py"),
    ],
)
def test_a_bad_output_spec_is_one_line_saying_what_to_fix(
    capsys: pytest.CaptureFixture[str], models_file: Path, spec: str, message: str
) -> None:
    code, out, err = run_cli(
        capsys, "run", "--model", "test", "--output", spec.format(file=models_file), "x"
    )
    assert code == 1
    assert out == ""
    assert message in err
    assert err.count("\n") == 1
