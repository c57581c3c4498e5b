"""Closing the writer folds the log back into runs.db even while a reader (the viewer, `steadyloop
logs` in another shell) has it open: runs.db alone, copied without its -wal, holds every run."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

from steadyloop import Agent
from steadyloop.store import open_store

RUNS = 30


def runs_in_the_file_alone(path: Path, folder: Path) -> set[str]:
    """The run ids in a copy of `path` made without its write-ahead log."""
    folder.mkdir()
    shutil.copyfile(path, folder / path.name)
    copy = sqlite3.connect(folder / path.name)
    try:
        return {row[0] for row in copy.execute("SELECT id FROM runs")}
    finally:
        copy.close()


async def test_a_log_closed_while_a_reader_has_it_open_is_one_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with Agent("test", store=path) as agent:
        first = await agent.run("before the reader")
    reader = open_store(path, read_only=True)
    try:
        async with Agent("test", store=path) as agent:
            results = [await agent.run(f"run {number}") for number in range(RUNS)]
            seen = await asyncio.to_thread(reader.runs, 100)  # the reader reads while they go
        assert len(seen) == RUNS + 1
        logged = {first.run_id, *(result.run_id for result in results)}
        assert runs_in_the_file_alone(path, tmp_path / "copy") == logged
        assert (tmp_path / "runs.db-wal").stat().st_size == 0
        assert len(reader.runs(100)) == RUNS + 1
    finally:
        reader.close()
