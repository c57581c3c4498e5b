"""Batches where features meet: runs paused for approval and resumed from the command line with
the batch's own factory, rows of unknown token counts, the results file guarded against a
second batch and against the tasks file, and the summary's rate."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from batch import agents
from batch.files import HERE, journal_lines, read_rows, write_tasks
from steadyloop.batch import BatchReport, run_batch
from steadyloop.store import RunStore
from support.cli import run_cli
from support.processes import python_env


def test_a_paused_batch_run_is_resumed_from_the_command_line_with_the_batchs_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 3)
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    code, stdout, _ = run_cli(capsys, "batch", str(tasks), "--agent",
                              "batch.agents:make_gated_agent", "--out", str(out), "--store",
                              str(store), "--batch", "pay")  # fmt: skip
    assert code == 0
    assert "3 runs paused for approval" in stdout
    assert "steadyloop resume RUN --approve CALL" in stdout
    rows = read_rows(out)
    assert {(row["status"], row["error"]) for row in rows} == {("paused", "approval: wire")}
    assert agents.WIRES == {}

    code, stdout, err = run_cli(capsys, "resume", "pay:t1", "--store", str(store),
                                "--approve", "wire")  # fmt: skip

    assert code == 0, err
    assert "task 1 paid" in stdout
    assert agents.WIRES == {"task 1": 1}
    code, _, err = run_cli(capsys, "resume", "pay:t1", "--store", str(store), "--approve", "wire")
    assert code == 1
    assert "is not waiting for approval" in err
    assert agents.WIRES == {"task 1": 1}
    log = RunStore(store, read_only=True)
    try:
        assert log.run("pay:t1").config["agent_factory"] == "batch.agents:make_gated_agent"
        assert log.run("pay:t1").status == "answered"
        assert log.run("pay:t2").status == "paused"
    finally:
        log.close()


def test_a_callable_factory_is_logged_only_when_it_can_be_imported_again(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    task = [{"id": "t", "prompt": "task t"}]

    run_batch(agents.make_gated_agent, task, out=tmp_path / "a.jsonl", store=store,
              batch="named")  # fmt: skip
    run_batch(lambda: agents.make_gated_agent(), task, out=tmp_path / "b.jsonl",
              store=store, batch="anonymous")  # fmt: skip

    log = RunStore(store, read_only=True)
    try:
        assert log.run("named:t").config["agent_factory"] == "batch.agents:make_gated_agent"
        assert "agent_factory" not in log.run("anonymous:t").config
    finally:
        log.close()


def test_a_paused_run_whose_row_was_lost_gets_its_paused_row_again(tmp_path: Path) -> None:
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    tasks = write_tasks(tmp_path / "tasks.jsonl", 4)
    run_batch("batch.agents:make_gated_agent", tasks, out=out, store=store, batch="b")
    calls, steps = sum(agents.MODEL_CALLS.values()), dict(agents.STEPS)
    out.unlink()  # a kill after the runs paused, before their rows were written

    report = run_batch("batch.agents:make_gated_agent", tasks, out=out, store=store, batch="b")

    assert report.paused == 4
    assert report.failed == 0
    assert {(row["status"], row["error"]) for row in read_rows(out)} == {
        ("paused", "approval: wire")
    }
    assert sum(agents.MODEL_CALLS.values()) == calls
    assert steps == agents.STEPS
    assert agents.WIRES == {}


def test_a_row_of_a_run_whose_replies_had_no_token_counts_has_null_tokens(
    tmp_path: Path,
) -> None:
    out = tmp_path / "results.jsonl"

    run_batch("batch.agents:make_agent", [{"id": "t", "prompt": "task t"}], out=out)

    (row,) = read_rows(out)
    assert row["status"] == "answered"
    assert row["usage"]["input_tokens"] is None
    assert row["usage"]["output_tokens"] is None
    assert row["usage"]["total_tokens"] is None
    assert row["usage"]["unreported"] == 2


def test_the_tasks_file_as_the_results_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "same.jsonl", 2)
    other = write_tasks(tmp_path / "other.jsonl", 2)
    before = tasks.read_bytes()

    code, stdout, err = run_cli(capsys, "batch", str(tasks), "--agent", "batch.agents:make_agent",
                                "--out", str(tasks))  # fmt: skip

    assert code == 1
    assert stdout == ""
    assert err.count("\n") == 1
    assert "is the tasks file" in err
    assert tasks.read_bytes() == before
    code, _, err = run_cli(capsys, "batch", str(tasks), "--agent", "batch.agents:make_agent",
                           "--out", str(other))  # fmt: skip
    assert code == 1
    assert "line 1 of the results file" in err
    assert "is not a result row" in err
    assert sum(agents.MODEL_CALLS.values()) == 0


def batch_process(tmp_path: Path, hold: Path) -> subprocess.Popen[str]:
    env = {**python_env(), "BATCH_TEST_JOURNAL": str(tmp_path / "journal"),
           "BATCH_TEST_HOLD": str(hold)}  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "batch", str(tmp_path / "tasks.jsonl"),
         "--agent", "batch.agents:make_agent", "--out", str(tmp_path / "results.jsonl"),
         "--store", str(tmp_path / "runs.db"), "--batch", "k", "--concurrency", "4"],
        cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_second_invocation_of_a_running_batch_is_refused_and_each_task_gets_one_row(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", 12)
    hold = tmp_path / "hold"
    hold.touch()  # the first batch's steps wait until it is gone
    first = batch_process(tmp_path, hold)
    try:
        deadline = time.monotonic() + 120
        while not any(w[0] == "start" for w in journal_lines(tmp_path / "journal")):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first batch started no step"
            time.sleep(0.02)

        second = batch_process(tmp_path, hold)
        _, err = second.communicate(timeout=120)

        assert second.returncode == 1
        assert err == (
            f"error: batch k is already running in process {first.pid} (it is writing "
            f"{tmp_path / 'results.jsonl'}): let it finish, or stop it and run the batch again "
            "to resume it; nothing was run\n"
        )
        hold.unlink()
        _, err = first.communicate(timeout=120)
    finally:
        first.kill()
        first.wait()
    assert first.returncode == 0, err
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(row["id"] for row in rows) == sorted(f"t{i}" for i in range(12))
    assert {row["status"] for row in rows} == {"answered"}


def test_the_summary_gives_a_slow_batchs_rate_in_significant_digits() -> None:
    report = BatchReport("ray", Path("out.jsonl"), tasks=3, skipped=0, answered=3, limit=0,
                         failed=0, bad=(), seconds=13.0)  # fmt: skip

    assert "13.0 s, 0.23 runs/s;" in report.summary()
