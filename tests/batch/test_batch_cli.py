"""`steadyloop batch` and `steadyloop logs --batch`, through `main([...])`."""

from __future__ import annotations

from pathlib import Path

import pytest

from batch import agents
from batch.files import read_rows, write_tasks
from support.cli import run_cli


def test_batch_runs_every_task_and_logs_counts_the_runs_by_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 30)
    with tasks.open("a") as file:
        file.write('{"id": "sad", "prompt": "fail please"}\n')
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"

    code, stdout, _ = run_cli(
        capsys, "batch", str(tasks), "--agent", "batch.agents:make_agent", "--out", str(out),
        "--store", str(store), "--batch", "nightly", "--concurrency", "8", "--rpm", "600000",
    )  # fmt: skip

    assert code == 0
    assert "batch nightly: 31 tasks; 30 answered" in stdout
    assert "1 failed" in stdout
    assert len(read_rows(out)) == 31

    code, stdout, _ = run_cli(capsys, "logs", "--batch", "nightly", "--store", str(store))

    assert code == 0
    assert stdout.splitlines()[0] == "batch nightly: 31 runs"
    counts = dict(line.split() for line in stdout.splitlines()[1:])
    assert counts == {"answered": "30", "error": "1"}


def test_rerunning_the_same_command_does_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 10)
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    args = ("batch", str(tasks), "--agent", "batch.agents:make_agent", "--out", str(out),
            "--store", str(store))  # fmt: skip
    assert run_cli(capsys, *args)[0] == 0
    before = out.read_bytes()

    code, stdout, _ = run_cli(capsys, *args)

    assert code == 0
    assert "0 answered" in stdout
    assert "10 done before" in stdout
    assert out.read_bytes() == before


def test_logs_of_an_unknown_batch_says_there_are_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    tasks = write_tasks(tmp_path / "t.jsonl", 2)
    run_cli(capsys, "batch", str(tasks), "--agent", "batch.agents:make_agent",
            "--out", str(tmp_path / "o.jsonl"), "--store", str(store))  # fmt: skip

    code, stdout, _ = run_cli(capsys, "logs", "--batch", "other", "--store", str(store))

    assert code == 0
    assert stdout.strip() == "no runs of batch other logged"


def test_bad_lines_are_listed_on_stderr_and_the_rest_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": 1, "prompt": "task 1"}\n{"id": 2, "prompt": \n{"prompt": "x"}\n')

    code, stdout, stderr = run_cli(
        capsys, "batch", str(tasks), "--agent", "batch.agents:make_agent",
        "--out", str(tmp_path / "o.jsonl"), "--store", str(tmp_path / "runs.db"),
    )  # fmt: skip

    assert code == 0
    assert f"skipped {tasks} line 2: not JSON" in stderr
    assert f'skipped {tasks} line 3: no "id"' in stderr
    assert "1 answered" in stdout
    assert "2 bad task lines skipped" in stdout


@pytest.mark.parametrize(
    ("lines", "factory", "message"),
    [
        (['{"id": "a", "prompt": "x"}', '{"id": "a", "prompt": "y"}'], "batch.agents:make_agent",
         "error: duplicate task ids"),
        (['{"id": "a", "prompt": "x"}'], "batch.agents:broken_factory",
         "error: the agent factory batch.agents:broken_factory failed"),
    ],
)  # fmt: skip
def test_a_batch_that_cannot_start_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], factory: str,
    message: str,
) -> None:  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.jsonl"

    code, _, stderr = run_cli(capsys, "batch", str(tasks), "--agent", factory, "--out", str(out),
                              "--store", str(tmp_path / "runs.db"))  # fmt: skip

    assert code == 1
    assert stderr.startswith(message)
    assert len(stderr.splitlines()) == 1
    assert not out.exists()


def test_ray_options_without_ray_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 1)

    code, _, stderr = run_cli(capsys, "batch", str(tasks), "--agent", "batch.agents:make_agent",
                              "--out", str(tmp_path / "o.jsonl"), "--workers", "2")  # fmt: skip

    assert code == 2
    assert "--workers and --chunk go with --ray" in stderr


def test_a_missing_tasks_file_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing, out = tmp_path / "nope.jsonl", tmp_path / "o.jsonl"

    code, _, stderr = run_cli(capsys, "batch", str(missing), "--agent",
                              "batch.agents:make_agent", "--out", str(out))  # fmt: skip

    assert code == 1
    assert stderr.startswith(f"error: cannot read the tasks file {missing}")


def test_set_sends_model_settings_with_every_request_of_the_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 3)
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    code, _, err = run_cli(
        capsys, "batch", str(tasks), "--agent", "batch.agents:make_agent_with_settings",
        "--out", str(out), "--store", str(store), "--set", "temperature=0",
        "--set", 'tool_choice={"type": "function", "function": {"name": "step"}}',
    )  # fmt: skip
    assert code == 0, err
    model = agents.BUILT[-1].model
    assert isinstance(model, agents.SettingsModel)
    assert model.seen  # every request of every run carried both
    assert all(
        seen
        == {"temperature": 0, "tool_choice": {"type": "function", "function": {"name": "step"}}}
        for seen in model.seen
    )


def test_set_with_a_model_that_takes_no_settings_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 2)
    code, _, err = run_cli(
        capsys, "batch", str(tasks), "--agent", "batch.agents:make_agent",
        "--out", str(tmp_path / "results.jsonl"), "--store", str(tmp_path / "runs.db"),
        "--set", "temperature=0",
    )  # fmt: skip
    assert code == 1  # a batch that cannot start, as with a broken factory
    assert err.startswith("error: the model function takes no request settings")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "results.jsonl").exists()  # no task ran
