"""Runs that commit at their own write-ahead points (the default durability) do so on their own
thread; the log's upkeep still follows: the write-ahead log is folded back and starts over
instead of growing with every run, and the log's own reads and imports still wait for another
connection's write lock instead of failing at once."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from steadyloop import Agent, AssistantMessage, Limits, ToolCall, tool
from steadyloop.store import SQLiteStore
from steadyloop.testing import ScriptedModel

TURNS = 10


@tool
async def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def replies(turns: int = TURNS) -> list[AssistantMessage | str]:
    calls = [
        AssistantMessage(
            tool_calls=tuple(
                ToolCall(f"c{turn}-{n}", "add", f'{{"a": {turn}, "b": {n}}}') for n in range(3)
            )
        )
        for turn in range(turns)
    ]
    return [*calls, "done"]


async def logged_runs(store: SQLiteStore, runs: int) -> None:
    for _ in range(runs):
        agent = Agent(ScriptedModel(replies()), tools=[add], store=store)
        assert (await agent.run("add")).output == "done"
    store.flush()


async def test_the_write_ahead_log_stops_growing_while_runs_commit(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    try:
        await logged_runs(store, 40)  # about 2,000 rows: past the first checkpoints
        first = (tmp_path / "runs.db-wal").stat().st_size
        await logged_runs(store, 80)
        assert (tmp_path / "runs.db-wal").stat().st_size < 1.5 * first
    finally:
        store.close()
    reader = SQLiteStore(path, read_only=True)
    assert len(reader.runs(500)) == 120
    reader.close()


async def test_an_import_waits_for_another_writer_after_runs_committed(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    target = SQLiteStore(tmp_path / "target.db")
    try:
        await logged_runs(source, 1)
        (run,) = source.runs()
        export = list(source.to_jsonl(run.id))
        await logged_runs(target, 1)  # its commits were made on this thread
        other = sqlite3.connect(
            tmp_path / "target.db", isolation_level=None, check_same_thread=False
        )
        other.execute("BEGIN IMMEDIATE")  # another connection writing for a moment
        threading.Timer(0.3, other.execute, ("COMMIT",)).start()
        assert target.from_jsonl(export) == run.id
        assert len(target.events(run.id)) == len(source.events(run.id))
        other.close()
    finally:
        source.close()
        target.close()


async def test_a_batch_logs_write_ahead_log_stops_growing(tmp_path: Path) -> None:
    """`durability="batch"` commits many rows at a time: the log is still folded back."""
    store = SQLiteStore(tmp_path / "runs.db")
    wal = tmp_path / "runs.db-wal"

    async def runs(count: int) -> None:
        for _ in range(count):
            model = ScriptedModel(replies(20))
            limits = Limits(max_turns=21)
            agent = Agent(model, tools=[add], limits=limits, store=store, durability="batch")
            assert (await agent.run("add")).output == "done"
        store.flush()

    try:
        await runs(120)  # about 12,000 rows: past the first checkpoints
        first = wal.stat().st_size
        await runs(120)
        assert wal.stat().st_size < 1.5 * first
        assert len(store.runs(500)) == 240
    finally:
        store.close()
