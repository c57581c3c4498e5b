"""A typed run killed after its answer was accepted and logged, before it was marked finished:
resuming it returns that answer from the log, and no model is asked again."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from steadyloop.store import open_store

SCRIPT = Path(__file__).resolve().parent / "typed_run.py"


def typed_run(store: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(store), mode],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_run_killed_after_its_answer_was_accepted_resumes_to_that_answer(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs.db"
    killed = typed_run(store, "kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    log = open_store(store, read_only=True)
    try:
        assert log.run("refund-1").status == "running"
        answers = [e for e in log.events("refund-1") if e.kind == "tool_finished"]
        assert [a.data["output"] for a in answers] == ["final answer accepted"]
    finally:
        log.close()

    resumed = typed_run(store, "resume")

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"order_id": "A1", "amount": 10}
    assert (tmp_path / "model-calls.log").read_text().split() == ["model"]
    log = open_store(store, read_only=True)
    try:
        assert log.run("refund-1").status == "answered"
        finished = [e.data["output"] for e in log.events("refund-1") if e.kind == "finished"]
        assert finished == [{"order_id": "A1", "amount": 10}]
    finally:
        log.close()
