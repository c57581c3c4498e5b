"""`run_batch` in one process: every task once, rows as they end, re-runs that cost nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from batch import agents
from batch.files import read_rows, write_tasks
from steadyloop import Agent, Limits, RunContext, UserMessage, tool
from steadyloop.batch import BadTask, BatchReport, LocalEngine, run_batch
from steadyloop.errors import ConfigError
from steadyloop.store import open_store
from steadyloop.testing import FunctionModel, TestModel


def test_a_thousand_tasks_are_each_answered_once_and_a_rerun_calls_no_model(
    tmp_path: Path, store_url: str
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 1000)
    out = tmp_path / "results.jsonl"

    report = run_batch("batch.agents:make_agent", tasks, out=out, store=store_url, batch="b1")

    rows = read_rows(out)
    assert sorted(row["id"] for row in rows) == sorted(f"t{i}" for i in range(1000))
    for row in rows:
        number = row["id"][1:]
        assert row["run_id"] == f"b1:{row['id']}"
        assert row["status"] == "answered"
        assert row["output"] == f"TASK {number}"
        assert row["usage"]["requests"] == 2
        assert row["error"] is None
    assert (report.tasks, report.answered, report.skipped, report.unfinished) == (1000, 1000, 0, 0)
    assert sum(agents.MODEL_CALLS.values()) == 2000
    assert len(agents.BUILT) == 1  # the factory is called once per worker
    before = out.read_bytes()

    again = run_batch("batch.agents:make_agent", tasks, out=out, store=store_url, batch="b1")

    assert sum(agents.MODEL_CALLS.values()) == 2000
    assert out.read_bytes() == before
    assert (again.skipped, again.ran) == (1000, 0)
    store = open_store(store_url, read_only=True)
    try:
        runs = store.runs_with_prefix("b1:", limit=2000)
    finally:
        store.close()
    assert len(runs) == 1000
    assert {run.status for run in runs} == {"answered"}


def test_a_lost_results_file_is_rebuilt_from_the_log_without_model_calls(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 50)
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    run_batch("batch.agents:make_agent", tasks, out=out, store=store)
    first = {row["id"]: row for row in read_rows(out)}
    calls = sum(agents.MODEL_CALLS.values())
    out.unlink()

    run_batch("batch.agents:make_agent", tasks, out=out, store=store)

    assert sum(agents.MODEL_CALLS.values()) == calls
    assert {row["id"]: row for row in read_rows(out)} == first


def test_the_default_batch_name_is_the_results_file_stem(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 3)

    report = run_batch(
        "batch.agents:make_agent", tasks, out=tmp_path / "eval-1.jsonl", store=tmp_path / "r.db"
    )

    assert report.batch == "eval-1"
    assert {row["run_id"] for row in read_rows(tmp_path / "eval-1.jsonl")} == {
        "eval-1:t0", "eval-1:t1", "eval-1:t2",
    }  # fmt: skip


def test_without_a_log_each_task_still_gets_its_row(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    tasks = [{"id": i, "prompt": f"task {i}", "expected": "ignored"} for i in range(20)]

    report = run_batch(agents.make_agent, tasks, out=out, engine=LocalEngine(4))

    assert report.answered == 20
    assert {row["id"]: row["output"] for row in read_rows(out)} == {
        str(i): f"TASK {i}" for i in range(20)
    }
    run_batch(agents.make_agent, tasks, out=out)
    assert len(read_rows(out)) == 20


def test_failed_runs_and_limits_are_rows_with_their_reason(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    tasks = [{"id": "ok", "prompt": "fine"}, {"id": "bad", "prompt": "fail now"}]

    report = run_batch("batch.agents:make_agent", tasks, out=out, store=tmp_path / "runs.db")

    rows = {row["id"]: row for row in read_rows(out)}
    assert rows["ok"]["status"] == "answered"
    assert rows["bad"]["status"] == "error"
    assert rows["bad"]["output"] is None
    assert "the model cannot answer fail now" in rows["bad"]["error"]
    assert (report.answered, report.failed) == (1, 1)


def one_turn_agent() -> Agent:
    return Agent(FunctionModel(agents.reply), tools=[agents.step],
                 limits=Limits(max_turns=1))  # fmt: skip


def test_a_run_stopped_by_a_limit_is_a_limit_row_before_and_after_a_rerun(
    tmp_path: Path,
) -> None:
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    tasks = [{"id": "x", "prompt": "task x"}]

    report = run_batch("batch.test_local_batch:one_turn_agent", tasks, out=out, store=store)
    first = read_rows(out)
    out.unlink()
    run_batch("batch.test_local_batch:one_turn_agent", tasks, out=out, store=store)

    assert report.limit == 1
    assert first[0]["status"] == "limit"
    assert first[0]["error"] == "turn_limit"
    assert read_rows(out) == first


def test_bad_task_lines_are_reported_with_their_line_numbers_and_skipped(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(
        b'{"id": "a", "prompt": "task a"}\n'
        b"not json\n"
        b"\n"
        b'{"prompt": "no id"}\n'
        b'{"id": "c"}\n'
        b'["a", "list"]\n'
        b'{"id": "d", "prompt": "task d"}\n'
        b'{"id": "e", "prompt": "\xff"}\n'
    )
    out = tmp_path / "results.jsonl"

    report = run_batch("batch.agents:make_agent", tasks, out=out)

    assert [bad.line for bad in report.bad] == [2, 4, 5, 6, 8]
    assert "not JSON" in report.bad[0].reason
    assert "id" in report.bad[1].reason
    assert "prompt" in report.bad[2].reason
    assert str(report.bad[0]).startswith("line 2: ")
    assert sorted(row["id"] for row in read_rows(out)) == ["a", "d"]


def test_duplicate_task_ids_are_refused_before_anything_runs(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    lines = [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y"}, {"id": "a", "prompt": "z"}]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "results.jsonl"

    with pytest.raises(ConfigError, match=r"duplicate task ids.*'a' on lines 1, 3"):
        run_batch("batch.agents:make_agent", tasks, out=out)

    assert not out.exists()
    assert not agents.MODEL_CALLS


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("batch.agents:broken_factory", "agent factory batch.agents:broken_factory failed: "
         "RuntimeError: no API key"),
        ("batch.agents:not_an_agent", "returned str, not an Agent"),
        ("batch.agents:missing", "batch.agents has no missing"),
        ("no_such_module:make", "cannot import the agent factory no_such_module:make"),
        ("batch.agents", "given as 'module:name'"),
    ],
)  # fmt: skip
def test_a_factory_that_fails_is_a_clear_error_before_any_task_runs(
    tmp_path: Path, factory: str, message: str
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 5)
    out = tmp_path / "results.jsonl"

    with pytest.raises(ConfigError, match=message):
        run_batch(factory, tasks, out=out)

    assert not out.exists()


def test_a_torn_last_line_is_repaired_and_its_task_run_again(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 4)
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    run_batch("batch.agents:make_agent", tasks, out=out, store=store)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:2]) + lines[2][:15])
    calls = sum(agents.MODEL_CALLS.values())

    run_batch("batch.agents:make_agent", tasks, out=out, store=store)

    rows = read_rows(out)
    assert sorted(row["id"] for row in rows) == ["t0", "t1", "t2", "t3"]
    assert sum(agents.MODEL_CALLS.values()) == calls


def test_a_results_file_with_a_foreign_line_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text('{"id": "t0", "status": "answered"}\nhello\n')

    with pytest.raises(ConfigError, match="line 2 of the results file"):
        run_batch("batch.agents:make_agent", write_tasks(tmp_path / "t.jsonl", 2), out=out)


def test_a_bad_rate_limit_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'6/fortnight'"):
        run_batch("batch.agents:make_agent", [], out=tmp_path / "o.jsonl", rate_limit="6/fortnight")


def test_a_run_killed_before_its_prompt_was_logged_resumes_with_its_prompt(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path / "runs.db")
    store.start_run(model="function", prompt="task 7", history=(), config={}, run_id="b:t7")
    store.close()  # the process died here: the run's row is logged, nothing else
    out = tmp_path / "results.jsonl"

    run_batch("batch.agents:make_agent", [{"id": "t7", "prompt": "task 7"}], out=out,
              store=tmp_path / "runs.db", batch="b")  # fmt: skip

    assert read_rows(out)[0]["output"] == "TASK 7"
    store = open_store(tmp_path / "runs.db", read_only=True)
    try:
        first = store.messages("b:t7")[0]
    finally:
        store.close()
    assert first == UserMessage("task 7")


def test_the_summary_says_how_many_tasks_are_left_for_the_next_run() -> None:
    report = BatchReport("b", Path("out.jsonl"), tasks=10, skipped=2, answered=5, limit=1,
                         failed=1, bad=(BadTask(3, "not JSON"),), seconds=2.0)  # fmt: skip

    assert report.summary() == (
        "batch b: 10 tasks; 5 answered, 1 stopped at a limit, 1 failed, 2 done before; "
        "2.0 s, 3.5 runs/s; results in out.jsonl\n"
        "1 bad task line skipped\n"
        "1 task did not finish: run the batch again to resume them"
    )


@tool(name="step", approve=True)
async def gated_step(task: str, turn: int, i: int) -> str:
    """Does one step of a task, once a reviewer approves it.

    Args:
        task: the task's prompt.
        turn: the model call that asked for this step.
        i: which of the turn's steps.
    """
    return "done"


def gated_agent() -> Agent:
    return Agent(FunctionModel(agents.reply), tools=[gated_step])


def test_a_run_waiting_for_approval_is_a_paused_row_naming_its_calls(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"

    report = run_batch("batch.test_local_batch:gated_agent", [{"id": "g", "prompt": "task g"}],
                       out=out, store=tmp_path / "runs.db", batch="b")  # fmt: skip

    (row,) = read_rows(out)
    assert row["status"] == "paused"
    assert row["error"] == "approval: task g-1-0, task g-1-1"
    assert (report.paused, report.unfinished) == (1, 0)
    assert "1 run paused for approval" in report.summary()


class Verdict(BaseModel):
    grade: int


def whose(ctx: RunContext[dict[str, str]]) -> str:
    """Says whose task this is."""
    return f"the task of {ctx.deps['owner']}"


def deps_agent() -> Agent:
    return Agent(TestModel(), tools=[whose])


def test_a_task_carries_its_own_deps_and_output_type(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    tasks = [
        {"id": "d", "prompt": "whose?", "deps": {"owner": "Ada"}},
        {"id": "o", "prompt": "grade it", "deps": {"owner": "Bo"},
         "output": "batch.test_local_batch:Verdict"},
    ]  # fmt: skip

    run_batch("batch.test_local_batch:deps_agent", tasks, out=out)

    rows = {row["id"]: row for row in read_rows(out)}
    assert "the task of Ada" in rows["d"]["output"]
    assert set(rows["o"]["output"]) == {"grade"}
