"""`RayEngine` on a local Ray: long-lived actors fed chunks, a worker killed mid-batch, the
cluster-wide rate limit, a factory that fails on the workers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from batch.files import journal_lines, read_rows, write_tasks
from steadyloop.batch import RayEngine, run_batch
from steadyloop.errors import ConfigError

TASKS = 400


def test_a_worker_killed_mid_batch_is_restarted_and_every_task_answered_once(
    tmp_path: Path, ray_journal: Path
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", TASKS)
    with tasks.open("a") as file:
        file.write('{"id": "doomed", "prompt": "doomed"}\n')  # its second step kills its worker
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    engine = RayEngine(workers=2, per_worker=64, chunk=20)

    report = run_batch("batch.agents:make_agent", tasks, out=out, store=store, engine=engine)

    assert (ray_journal.parent / "died").exists()
    rows = read_rows(out)
    assert sorted(row["id"] for row in rows) == sorted([*(f"t{i}" for i in range(TASKS)), "doomed"])
    assert [row["error"] for row in rows if row["status"] != "answered"] == []
    assert report.answered == TASKS + 1
    journal = list(journal_lines(ray_journal))
    steps_started = Counter(tuple(w[1:]) for w in journal if w[0] == "start")
    assert steps_started.most_common(1)[0][1] == 1  # no step ran twice, not even the fatal one
    model_calls = Counter(tuple(w[1:-1]) for w in journal if w[0] == "model")
    repeated = sum(count - 1 for count in model_calls.values())
    assert repeated <= 64  # at most the runs in flight on the dead worker asked again
    before = out.read_bytes()

    again = run_batch("batch.agents:make_agent", tasks, out=out, store=store, engine=engine)

    assert again.ran == 0
    assert out.read_bytes() == before
    assert len(list(journal_lines(ray_journal))) == len(journal)


def test_the_cluster_wide_rate_limit_holds_the_mean_at_the_cap(
    tmp_path: Path, ray_journal: Path
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 150)

    run_batch("batch.agents:make_agent", tasks, out=tmp_path / "o.jsonl", rate_limit="100/s",
              engine=RayEngine(workers=2, per_worker=32, chunk=10))  # fmt: skip

    stamps = [float(w[-1]) for w in journal_lines(ray_journal) if w[0] == "model"]
    assert len(stamps) == 300
    mean = (len(stamps) - 10) / (max(stamps) - min(stamps))  # a burst of 10 may go at once
    # Never over the cap (unlimited, two workers of 32 go far faster); how far under it a busy
    # machine lags is not asserted.
    assert mean <= 1.1 * 100


def test_a_factory_that_fails_on_the_workers_is_an_error_before_any_task_runs(
    tmp_path: Path, ray_journal: Path
) -> None:
    out = tmp_path / "o.jsonl"

    with pytest.raises(ConfigError, match=r"batch\.agents:broken_factory failed: RuntimeError"):
        run_batch("batch.agents:broken_factory", write_tasks(tmp_path / "t.jsonl", 5), out=out,
                  engine=RayEngine(workers=1))  # fmt: skip

    assert not out.exists()
    assert not ray_journal.exists()


def test_ray_takes_the_factory_by_name_and_the_log_by_location(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", 1)
    from batch import agents

    with pytest.raises(ConfigError, match="'module:function'"):
        run_batch(agents.make_agent, tasks, out=tmp_path / "o.jsonl", engine=RayEngine())
