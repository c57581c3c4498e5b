"""`kill PID` (SIGTERM) on a command-line run stops it the way Ctrl-C does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from steadyloop.cli import main

TOOLS = Path(__file__).resolve().parent / "resume_tools.py"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)
    return tmp_path / "home"


def wait_for(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def logged_run(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The id and ENDED column of the only run `steadyloop logs` lists."""
    assert main(["logs"]) == 0
    _, row = capsys.readouterr().out.splitlines()
    return row.split()[0], row.split()[-1]


def test_sigterm_mid_tool_exits_130_logs_interrupted_and_can_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "RESUME_DIR": str(tmp_path)}
    calls = tmp_path / "calls.log"
    with subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "run", "--tools", str(TOOLS), "--model", "test",
         "do it"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            # all three tools have started; the two slow ones wait for `release`
            wait_for(lambda: calls.exists() and len(calls.read_text().split()) == 3)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted; continue with: steadyloop resume" in err
    assert "Traceback" not in err

    run_id, ended = logged_run(capsys)
    assert ended == "interrupted"

    (tmp_path / "release").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "steadyloop", "resume", run_id],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # As after Ctrl-C: the idempotent fetch runs again, the charge is reported as interrupted.
    assert "charge_slow [error]: interrupted" in done.stdout
    assert "fetch_slow [ok]: fetched" in done.stdout
    assert calls.read_text().split().count("charge_slow") == 1
    assert logged_run(capsys) == (run_id, "end_turn")
