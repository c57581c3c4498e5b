"""Approvals in DBOS workflows: `agent.resume(run_id, decisions=...)` in a workflow whose worker
is killed (in the approved call, or in the model call after it), then recovered. Only the step
in flight runs again, every approved payment happens once, and each recovered run's log equals
that of a clean run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from batch.files import HERE, comparable, journal_lines
from steadyloop.store import open_store
from support.postgres import new_database
from support.processes import python_env

PAID_AT_KILL = ["w0", "w1", "w2"]  # w0 kills its worker in `pay`, before paying
REPLIED_AT_KILL = ["v0", "v1", "v2"]  # v0 kills its worker in the model call after `pay`
CLEAN = ["c0", "c1", "c2"]  # their twins, approved in a worker that lives


def worker(system_db: str, store: str, mode: str, run_ids: list[str], folder: Path,
           die_at: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    env = {**python_env(), "DURABLE_TEST_JOURNAL": str(folder / f"{mode}-{run_ids[0]}.journal"),
           "DURABLE_TEST_PAYMENTS": str(folder / "payments"),
           "DURABLE_TEST_DIED": str(folder / f"died-{run_ids[0]}")}  # fmt: skip
    env.pop("DURABLE_TEST_DIE_AT", None)
    if die_at is not None:
        env["DURABLE_TEST_DIE_AT"] = die_at
    return subprocess.run(
        [sys.executable, str(HERE / "durable_approval_worker.py"), system_db, store, mode,
         *run_ids],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_approvals_whose_worker_died_are_recovered_and_pay_once(
    tmp_path: Path, postgres_server: Any
) -> None:
    pytest.importorskip("dbos", reason="DBOS is not installed: pip install 'steadyloop[dbos]'")
    system_db, store = new_database(postgres_server), new_database(postgres_server)
    paused = worker(system_db, store, "pause", PAID_AT_KILL + REPLIED_AT_KILL + CLEAN, tmp_path)
    assert paused.returncode == 0, paused.stderr
    assert json.loads(paused.stdout) == ["approval"] * 9
    clean = worker(system_db, store, "approve", CLEAN, tmp_path)
    assert clean.returncode == 0, clean.stderr
    tickets = ["paid ticket 0", "paid ticket 1", "paid ticket 2"]
    assert json.loads(clean.stdout) == tickets

    for runs, die_at in ((PAID_AT_KILL, "pay"), (REPLIED_AT_KILL, "model")):
        killed = worker(system_db, store, "approve", runs, tmp_path, die_at)
        assert killed.returncode == 9, killed.stderr
        recovered = worker(system_db, store, "recover", runs, tmp_path)
        assert recovered.returncode == 0, recovered.stderr
        assert json.loads(recovered.stdout) == tickets  # no approval lost
        # Only the step in flight ran again: the payment cut short, or the reply.
        again = list(journal_lines(tmp_path / f"recover-{runs[0]}.journal"))
        assert [w[1] for w in again if w[0] == "pay"] == (runs[:1] if die_at == "pay" else [])
        assert [w[1:] for w in again if w[0] == "model"] == [["ticket", "0", "2"]]

    payments = Counter((tmp_path / "payments").read_text().split())
    assert payments == dict.fromkeys(PAID_AT_KILL + REPLIED_AT_KILL + CLEAN, 1)  # none twice
    log = open_store(store, read_only=True)
    try:
        for run, twin in [
            *zip(PAID_AT_KILL, CLEAN, strict=True),
            *zip(REPLIED_AT_KILL, CLEAN, strict=True),
        ]:
            assert log.run(run).status == "answered"
            assert log.messages(run) == log.messages(twin)
            assert comparable(log.events(run)) == comparable(log.events(twin))
    finally:
        log.close()
