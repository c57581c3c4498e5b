"""The command line's typed answers (`--output`), approvals (`--approve`, `resume --approve`)
and images (`--image`)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from support.cli import run_cli
from support.samples import PNG

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)
    return tmp_path / "home"


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

            def refund_for(order_id: str) -> Refund:
                return Refund(order_id=order_id, amount=0)
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
        ("{file}:refund_for", "refund_for is a function, not a type"),
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


GATED_TOOLS = '''
from steadyloop import tool


@tool(approve=True)
def issue_refund(order_id: str, amount: float) -> str:
    """Refunds an order; a person approves it first."""
    with open(__file__ + ".effects", "a") as log:
        log.write(f"refund {order_id} {amount}\\n")
    return f"refunded {amount} on {order_id}"


@tool
def lookup_order(order_id: str) -> str:
    """The order's status."""
    return f"{order_id}: delivered"
'''


@pytest.fixture
def gated(tmp_path: Path) -> Path:
    path = tmp_path / "gated.py"
    path.write_text(GATED_TOOLS)
    return path


def effects(gated: Path) -> list[str]:
    log = Path(str(gated) + ".effects")
    return log.read_text().splitlines() if log.exists() else []


def test_a_gated_call_pauses_with_exit_4_and_resume_approves_it(
    capsys: pytest.CaptureFixture[str], gated: Path, home: Path
) -> None:
    code, out, err = run_cli(
        capsys, "run", "--tools", str(gated), "--model", "test", "--approve", "refund A1"
    )
    assert code == 4  # no terminal to ask on: the run pauses
    assert out == ""
    assert "waiting for approval:" in err
    assert '  call_0  issue_refund({"order_id": "example", "amount": 1.0})' in err
    run_id = err.split("continue with: steadyloop resume ")[1].split()[0]
    assert effects(gated) == []

    code, out, err = run_cli(capsys, "resume", run_id)
    assert code == 1
    assert "is waiting for decisions on call_0 (issue_refund)" in err

    code, out, err = run_cli(capsys, "resume", run_id, "--approve", "call_0")
    assert code == 0, err
    assert "issue_refund [ok]: refunded 1.0 on example" in out
    assert effects(gated) == ["refund example 1.0"]

    code, out, _ = run_cli(capsys, "show", run_id)
    assert code == 0
    assert "decision [call_0] issue_refund: waiting for approval" in out
    assert "decision [call_0] issue_refund: approved" in out

    code, _, err = run_cli(capsys, "resume", run_id, "--approve", "call_0")
    assert code == 1
    assert "is not waiting for approval" in err
    assert effects(gated) == ["refund example 1.0"]


def test_deny_with_a_reason_and_the_pause_as_json(
    capsys: pytest.CaptureFixture[str], gated: Path
) -> None:
    code, out, _ = run_cli(capsys, "run", "--tools", str(gated), "--model", "test", "--json", "x")
    assert code == 4
    data = json.loads(out)
    assert data["stop_reason"] == "approval"
    assert data["pending"] == [
        {"call_id": "call_0", "name": "issue_refund",
         "arguments": {"order_id": "example", "amount": 1.0}}
    ]  # fmt: skip
    code, out, err = run_cli(
        capsys, "resume", data["run_id"], "--deny", "call_0=needs a receipt", "--json"
    )
    assert code == 0, err
    assert "denied by the reviewer: needs a receipt" in json.loads(out)["output"]
    assert effects(gated) == []
    code, out, _ = run_cli(capsys, "show", data["run_id"])
    assert "decision [call_0] issue_refund: denied (needs a receipt)" in out


def test_the_terminal_approver_asks_y_n_e() -> None:
    import asyncio
    import io

    from steadyloop import Approve, Defer, Deny, Edit, PendingCall, RunContext
    from steadyloop.cli.approve import terminal_approver
    from steadyloop.cli.live import PlainView

    def scripted(*lines: str) -> tuple[io.StringIO, object]:
        answers = iter(lines)
        out = io.StringIO()

        def read() -> str:
            try:
                return next(answers)
            except StopIteration:
                raise EOFError from None

        return out, terminal_approver(PlainView(out), read=read, out=out)

    call = PendingCall("c1", "issue_refund", {"amount": 500})
    context: RunContext[None] = RunContext(None)

    def decide(*lines: str) -> tuple[object, str]:
        out, approver = scripted(*lines)
        assert callable(approver)
        return asyncio.run(approver(call, context)), out.getvalue()

    assert decide("y")[0] == Approve()
    assert decide("no", "too much")[0] == Deny("too much")
    decision, shown = decide("maybe", "e", "{bad", "e", "[1]", "e", '{"amount": 50}')
    assert decision == Edit({"amount": 50})
    assert 'run issue_refund({"amount": 500}) [c1]? y/n/e: ' in shown
    assert "answer y (run it), n (deny it) or e (edit its arguments)" in shown
    assert "not JSON" in shown
    assert "must be a JSON object" in shown
    assert decide()[0] == Defer()  # end of input: the call waits


def test_the_approval_example_runs_offline() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "approvals.py"), "--model", "test"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "is waiting for 1 approval(s)" in done.stdout
    assert "refunds made: [('example', 1.0)]" in done.stdout


def test_images_go_with_the_prompt_and_an_unreadable_one_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
) -> None:
    from steadyloop import Image
    from steadyloop.store import RunStore

    (tmp_path / "a.png").write_bytes(PNG)
    (tmp_path / "b.png").write_bytes(PNG)
    code, out, err = run_cli(
        capsys, "run", "--model", "test", "--image", str(tmp_path / "a.png"),
        "--image", str(tmp_path / "b.png"), "what is this?",
    )  # fmt: skip
    assert code == 0, err
    assert out.strip() == "(test model) You said: what is this?"
    (run,) = RunStore(home / "runs.db").runs()
    (prompt, _) = RunStore(home / "runs.db").messages(run.id)
    image = Image.from_bytes(PNG)
    assert getattr(prompt, "parts", ()) == ("what is this?", image, image)

    code, out, err = run_cli(
        capsys, "run", "--model", "test", "--image", str(tmp_path / "missing.png"), "x"
    )
    assert code == 1
    assert err == f"error: image not found: {tmp_path / 'missing.png'} (check the path)\n"


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_approve_asks_on_a_terminal(tmp_path: Path, home: Path, gated: Path) -> None:
    import os
    import pty
    import subprocess

    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "run", "--tools", str(gated), "--model", "test",
         "--approve", "refund it"],
        stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "STEADYLOOP_HOME": str(home)},
    ) as proc:  # fmt: skip
        os.close(follower)
        os.write(leader, b'e\n{"order_id": "example", "amount": 0.5}\n')
        out, err = proc.communicate(timeout=120)
    os.close(leader)
    assert proc.returncode == 0, err
    assert 'run issue_refund({"order_id": "example", "amount": 1.0}) [call_0]? y/n/e:' in err
    assert "issue_refund [ok]: the reviewer changed the arguments" in out
    assert effects(gated) == ["refund example 0.5"]
