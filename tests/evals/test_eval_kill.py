"""`steadyloop eval` killed with SIGKILL mid-way, then run again: no case that had finished runs
again, a run cut short goes on from its log, and a finished eval run again asks no model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from support import TESTS
from support.processes import python_env

CASES = 300


def eval_process(tmp_path: Path, journal: Path) -> subprocess.Popen[bytes]:
    """The eval command as a process of its own; its stderr goes to JOURNAL.err."""
    env = {**python_env(), "EVAL_TEST_JOURNAL": str(journal), "EVAL_TEST_SLEEP": "0.005,0.02"}
    with journal.with_suffix(".err").open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "steadyloop", "eval", str(tmp_path / "cases.jsonl"),
             "--agent", "evals.agents:make_agent", "--scorer", "contains", "--name", "k",
             "--store", str(tmp_path / "runs.db"), "--concurrency", "32"],
            cwd=TESTS, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip


def finish(process: subprocess.Popen[bytes], journal: Path) -> None:
    try:
        process.wait(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 0, journal.with_suffix(".err").read_text()


def calls(journal: Path) -> list[tuple[str, int]]:
    if not journal.exists():
        return []
    words = [line.split(" ") for line in journal.read_text().splitlines()]
    return [(w[1], int(w[2])) for w in words if w[0] == "model"]


def test_a_killed_eval_run_again_runs_no_finished_case_twice(tmp_path: Path) -> None:
    lines = [f'{{"id": "c{i}", "input": "case {i}", "expected": "CASE {i}"}}' for i in range(CASES)]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    first, second, third = (tmp_path / f"{n}.journal" for n in ("first", "second", "third"))

    process = eval_process(tmp_path, first)
    deadline = time.monotonic() + 120
    while sum(turn == 2 for _, turn in calls(first)) < CASES // 5:
        assert process.poll() is None, "the eval ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = calls(first)
    assert sum(turn == 2 for _, turn in before) < CASES, "the eval finished before the kill"

    finish(eval_process(tmp_path, second), second)

    answered_before = {case for case, turn in before if turn == 2}
    turns_before: dict[str, list[int]] = defaultdict(list)
    for case, turn in before:
        turns_before[case].append(turn)
    for case, turn in calls(second):
        # A case whose answer was asked for before the kill may repeat only that call, which
        # was in flight; every other call starts where the first process stopped.
        assert turn >= max(turns_before[case], default=1), (case, turn)
    repeated = [c for c, t in calls(second) if c in answered_before and t < 2]
    assert repeated == []
    assert {case for case, _ in calls(first) + calls(second)} == {f"case_{i}" for i in range(CASES)}

    finish(eval_process(tmp_path, third), third)
    assert calls(third) == []
