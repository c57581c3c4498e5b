"""A prompt holding bytes that are not UTF-8 (a Latin-1 'é' here), in argv or on stdin, runs and is
logged with U+FFFD in their place instead of failing with a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from steadyloop.cli import main


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)
    return tmp_path / "home"


def steadyloop(*args: str | bytes, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    # strict decoding of stdin and stdout, as in a UTF-8 terminal
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    return subprocess.run(
        [sys.executable, "-m", "steadyloop", *args],
        input=stdin, capture_output=True, env=env, timeout=60,
    )  # fmt: skip


def logged_prompt(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["logs", "-n", "1"]) == 0
    run_id = capsys.readouterr().out.splitlines()[1].split()[0]
    assert main(["show", run_id, "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["run"]
    assert run["status"] == "answered"
    prompt: str = run["prompt"]
    return prompt


@pytest.mark.parametrize(
    ("args", "stdin"),
    [([b"caf\xe9 ?"], b""), (["-"], b"caf\xe9 ?\n")],
    ids=["argv", "stdin"],
)
def test_prompt_that_is_not_utf8_runs_and_is_logged(
    capsys: pytest.CaptureFixture[str], args: list[str | bytes], stdin: bytes
) -> None:
    done = steadyloop("run", "--model", "test", *args, stdin=stdin)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    assert done.stdout.decode() == "(test model) You said: caf\ufffd ?\n"
    assert logged_prompt(capsys) == "caf\ufffd ?"
