"""The run log's floors in `bench/drivers/floors.py` write what the log wrote: a floor that wrote
less would flatter the log's ratio to it."""

from __future__ import annotations

import asyncio
import importlib
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

DRIVERS = Path(__file__).resolve().parent.parent / "bench" / "drivers"


@pytest.fixture(scope="module")
def drivers() -> Iterator[tuple[ModuleType, ...]]:
    """The bench's `common`, `floors` and `steadyloop_driver` modules."""
    names = ("common", "floors", "steadyloop_driver")
    sys.path.insert(0, str(DRIVERS))
    try:
        yield tuple(map(importlib.import_module, names))
    finally:
        sys.path.remove(str(DRIVERS))
        for name in (*names, "bare_driver"):
            sys.modules.pop(name, None)


def _rows(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The file's runs (without id and times) and events (without run id and time)."""
    db = sqlite3.connect(path)
    try:
        runs = db.execute(
            "SELECT model, prompt, history, config, status, stop_reason, error, usage FROM runs"
        ).fetchall()
        events = db.execute("SELECT seq, kind, data FROM events ORDER BY seq").fetchall()
    finally:
        db.close()
    return runs, events


@pytest.mark.parametrize("kind", ["SqliteFloor", "SqliteBatchFloor"])
def test_a_floor_commits_the_rows_the_log_committed_for_its_run(
    drivers: tuple[ModuleType, ...], kind: str, tmp_path: Path
) -> None:
    from steadyloop.store import SQLiteStore

    common, floors, driver = drivers
    plan = common.Plan(turns=4, calls=2, is_async=True)
    runner = driver.SteadyloopRunner(plan, store=tmp_path / "log.sqlite3")
    store = runner.agent.store

    def one_run() -> None:
        common.CURRENT.set(common.RunState(plan))
        asyncio.run(runner.run())
        store.flush()

    run_id, transactions = floors.record_log_transactions(store, one_run)
    store.close()
    path = tmp_path / "floor.sqlite3"
    SQLiteStore(path).close()
    floor = getattr(floors, kind)(plan, path, run_id, transactions)
    try:
        common.CURRENT.set(common.RunState(plan))
        assert common.FINAL_TEXT in asyncio.run(floor.run())
    finally:
        floor.close()

    logged_runs, logged_events = _rows(tmp_path / "log.sqlite3")
    floor_runs, floor_events = _rows(path)
    assert floor_runs == logged_runs
    assert logged_runs[0][4] == "answered"
    assert floor_events == logged_events
    # the prompt; a request and a reply each turn; the answers of every turn's calls but the
    # last turn's (it answers); the run's end
    assert len(logged_events) == 1 + 2 * plan.turns + (plan.turns - 1) * plan.calls + 1
