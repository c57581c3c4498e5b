"""Many processes and threads creating the same new log at once all get a working log."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from steadyloop import Agent
from steadyloop.store import SCHEMA_VERSION, RunStore

OPEN_AND_RUN = """
import sys, time
from pathlib import Path
from steadyloop import Agent
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
print(Agent("test", store=sys.argv[1]).run_sync("hello").run_id)
"""


def test_processes_opening_a_new_log_at_once_all_work(tmp_path: Path) -> None:
    store_path, go = tmp_path / "new" / "runs.db", tmp_path / "go"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AND_RUN, str(store_path), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    go.touch()
    results = []
    for process in processes:
        try:
            results.append((*process.communicate(timeout=60), process.returncode))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert [(code, err) for _, err, code in results] == [(0, "")] * 8
    store = RunStore(store_path)
    assert {r.id for r in store.runs(limit=100)} == {out.strip() for out, _, _ in results}
    assert all(r.status == "answered" for r in store.runs(limit=100))


def test_threads_opening_a_new_log_at_once_all_work(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def open_and_run() -> None:
        barrier.wait()
        try:
            agent = Agent("test", store=RunStore(store_path))
            agent.run_sync("hello")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_and_run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store = RunStore(store_path)
    assert len(store.runs(limit=100)) == 8
    import sqlite3

    with sqlite3.connect(store_path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
