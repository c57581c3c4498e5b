"""A batch process killed with SIGKILL, then run again: every task ends with exactly one row, and
nothing that had finished before the kill runs a second time; with a gated tool, no call of it
runs before it is approved, and then once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from batch.files import HERE, journal_lines, read_rows, write_tasks
from support.processes import python_env

TASKS = 600


def batch_process(
    tmp_path: Path, journal: Path, factory: str = "batch.agents:make_agent"
) -> subprocess.Popen[bytes]:
    """The batch command as a process of its own; its stderr goes to JOURNAL.err."""
    env = {**python_env(), "BATCH_TEST_JOURNAL": str(journal), "BATCH_TEST_SLEEP": "0.005,0.02"}
    with journal.with_suffix(".err").open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "steadyloop", "batch", str(tmp_path / "tasks.jsonl"),
             "--agent", factory, "--out", str(tmp_path / "results.jsonl"),
             "--store", str(tmp_path / "runs.db"), "--batch", "k", "--concurrency", "64"],
            cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip


def whole_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_killed_batch_run_again_finishes_each_task_once_repeating_only_calls_in_flight(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", TASKS)
    out = tmp_path / "results.jsonl"
    first_journal, second_journal = tmp_path / "first.journal", tmp_path / "second.journal"

    kill_when_rows(batch_process(tmp_path, first_journal), out, TASKS // 6)
    rows_at_kill = {row["id"] for row in read_rows_whole(out)}
    assert len(rows_at_kill) < TASKS, "the batch finished before it could be killed"

    second = batch_process(tmp_path, second_journal)
    try:
        second.wait(timeout=300)
    finally:
        second.kill()
    assert second.returncode == 0, second_journal.with_suffix(".err").read_text()

    rows = read_rows(out)
    assert sorted(row["id"] for row in rows) == sorted(f"t{i}" for i in range(TASKS))
    assert [row["error"] for row in rows if row["status"] != "answered"] == []

    finished_steps = {tuple(w[1:]) for w in journal_lines(first_journal) if w[0] == "end"}
    rerun_steps = {tuple(w[1:]) for w in journal_lines(second_journal) if w[0] == "start"}
    assert finished_steps
    assert not finished_steps & rerun_steps

    first_turns: dict[str, list[int]] = defaultdict(list)
    for words in journal_lines(first_journal):
        if words[0] == "model":
            first_turns[" ".join(words[1:3])].append(int(words[3]))
    went_on = 0
    for words in journal_lines(second_journal):
        if words[0] == "model":
            task, turn = " ".join(words[1:3]), int(words[3])
            assert f"t{words[2]}" not in rows_at_kill
            # Only the last model call before the kill may have been cut short.
            assert turn >= max(first_turns[task], default=1)
            went_on += turn > 1 and turn == min(first_turns[task], default=0) + 1
    assert went_on, "no run went on from its log"


def kill_when_rows(process: subprocess.Popen[bytes], out: Path, rows: int) -> None:
    """SIGKILLs `process` once `out` has `rows` whole lines (or when it has ended)."""
    try:
        deadline = time.monotonic() + 120
        while whole_lines(out) < rows and process.poll() is None:
            assert time.monotonic() < deadline, "the batch wrote no rows"
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()


def test_a_killed_batch_of_gated_runs_run_again_pauses_each_once_and_wires_only_when_approved(
    tmp_path: Path,
) -> None:
    tasks = TASKS // 3
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "results.jsonl"
    journals = [tmp_path / "first.journal", tmp_path / "second.journal"]

    kill_when_rows(batch_process(tmp_path, journals[0], "batch.agents:make_gated_agent"), out,
                   tasks // 4)  # fmt: skip
    rows_at_kill = {row["id"] for row in read_rows_whole(out)}
    assert len(rows_at_kill) < tasks, "the batch finished before it could be killed"
    second = batch_process(tmp_path, journals[1], "batch.agents:make_gated_agent")
    try:
        second.wait(timeout=300)
    finally:
        second.kill()
    assert second.returncode == 0, journals[1].with_suffix(".err").read_text()

    rows = read_rows(out)
    assert sorted(row["id"] for row in rows) == sorted(f"t{i}" for i in range(tasks))
    assert {(row["status"], row["error"]) for row in rows} == {("paused", "approval: wire")}
    finished = {tuple(w[1:]) for w in journal_lines(journals[0]) if w[0] == "end"}
    assert finished
    assert not finished & {tuple(w[1:]) for w in journal_lines(journals[1]) if w[0] == "start"}
    wires = [w for journal in journals for w in journal_lines(journal) if w[0] == "wire"]
    assert wires == []

    approve = [sys.executable, "-m", "steadyloop", "resume", "k:t0", "--store",
               str(tmp_path / "runs.db"), "--approve", "wire"]  # fmt: skip
    env = {**python_env(), "BATCH_TEST_JOURNAL": str(tmp_path / "resume.journal")}
    done = subprocess.run(approve, cwd=HERE, env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    again = subprocess.run(approve, cwd=HERE, env=env, capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "task 0 paid" in done.stdout
    assert again.returncode == 1
    assert "is not waiting for approval" in again.stderr
    assert [w for w in journal_lines(tmp_path / "resume.journal") if w[0] == "wire"] == [
        ["wire", "task", "0"]
    ]


def read_rows_whole(path: Path) -> list[dict[str, object]]:
    """The rows of the file's whole lines (a kill may have torn the last one)."""
    data = path.read_bytes()
    whole = path.with_suffix(".whole")
    whole.write_bytes(data[: data.rfind(b"\n") + 1])
    return read_rows(whole)
