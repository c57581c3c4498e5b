"""`durable(agent)` on DBOS over Postgres: a worker killed mid-run, then restarted. Only the
steps in flight run again, and each recovered run's log equals that of a clean run, whichever
way the workflow starts its run (`agent.run(prompt)`, with `run_id=DBOS.workflow_id`, or with
`if_exists="resume"` too: see `durable_worker.py`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batch import agents
from batch.files import HERE, comparable, journal_lines
from steadyloop.errors import ConfigError
from steadyloop.store import open_store
from support.postgres import new_database
from support.processes import python_env

PROMPTS = [*(f"task{i}" for i in range(15)), "doomed"]  # doomed's second step kills its worker


def worker(system_db: str, store: str, mode: str, prefix: str, journal: Path,
           died: Path) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {**python_env(), "BATCH_TEST_SLEEP": "0.005,0.02", "BATCH_TEST_JOURNAL": str(journal),
           "BATCH_TEST_DIE_AT": "doomed 1 1", "BATCH_TEST_DIED": str(died)}  # fmt: skip
    return subprocess.run(
        [sys.executable, str(HERE / "durable_worker.py"), system_db, store, mode, prefix, *PROMPTS],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_worker_killed_mid_run_is_recovered_rerunning_only_the_steps_in_flight(
    tmp_path: Path, postgres_server: Any
) -> None:
    pytest.importorskip("dbos", reason="DBOS is not installed: pip install 'steadyloop[dbos]'")
    system_db, store = new_database(postgres_server), new_database(postgres_server)
    died = tmp_path / "died"
    first, second = tmp_path / "first.journal", tmp_path / "second.journal"

    killed = worker(system_db, store, "start", "w", first, died)
    assert killed.returncode == 9, killed.stderr
    recovered = worker(system_db, store, "recover", "w", second, died)
    assert recovered.returncode == 0, recovered.stderr
    clean = worker(system_db, store, "start", "c", tmp_path / "clean.journal", died)
    assert clean.returncode == 0, clean.stderr

    expected = [prompt.upper() for prompt in PROMPTS]
    assert json.loads(recovered.stdout) == expected
    assert json.loads(clean.stdout) == expected
    last_asked: dict[str, int] = {}
    for words in journal_lines(first):
        if words[0] == "model":
            last_asked[words[1]] = max(last_asked.get(words[1], 0), int(words[2]))
    rerun_steps = [w[1:] for w in journal_lines(second) if w[0] == "start"]
    asked_again = [w[1:3] for w in journal_lines(second) if w[0] == "model"]
    assert ["doomed", "1", "1"] in rerun_steps  # the step that was in flight ran again
    # What had finished before a run's last step in flight never runs again.
    assert all(int(turn) >= last_asked[task] for task, turn, _ in rerun_steps)
    assert all(int(turn) >= last_asked[task] for task, turn in asked_again)
    log = open_store(store, read_only=True)
    try:
        for index in range(len(PROMPTS)):
            assert log.run(f"w{index}").status == "answered"
            assert log.messages(f"w{index}") == log.messages(f"c{index}")
            assert comparable(log.events(f"w{index}")) == comparable(log.events(f"c{index}"))
    finally:
        log.close()


def test_a_durable_agent_needs_a_run_log() -> None:
    pytest.importorskip("dbos", reason="DBOS is not installed: pip install 'steadyloop[dbos]'")
    from steadyloop.engines.dbos import durable

    with pytest.raises(ConfigError, match="durable\\(\\) needs an agent with a run log"):
        durable(agents.make_agent())


async def test_outside_a_workflow_a_durable_agent_runs_as_usual(tmp_path: Path) -> None:
    pytest.importorskip("dbos", reason="DBOS is not installed: pip install 'steadyloop[dbos]'")
    from steadyloop.engines.dbos import durable

    agent = agents.make_agent()
    agent.store = open_store(tmp_path / "runs.db")
    assert durable(durable(agent)) is agent

    result = await agent.run("task 1", run_id="r1")

    assert result.output == "TASK 1"
    assert sum(agents.STEPS.values()) == 2
    assert len(agent.store.events("r1")) == 8
    agent.store.close()
