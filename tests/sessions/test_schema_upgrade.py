"""A run log written before sessions (schema version 1) is upgraded by the first writer that
opens it, on SQLite and on a real Postgres: its runs read back with no links, and go on in a
session."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from steadyloop import Agent, ConfigError
from steadyloop.store import SCHEMA_VERSION, open_store
from steadyloop.testing import ScriptedModel

# Schema version 1, as steadyloop made it before runs had links.
VERSION_1 = [
    """CREATE TABLE runs (
        id TEXT PRIMARY KEY, created {real} NOT NULL, updated {real} NOT NULL,
        model TEXT NOT NULL, prompt TEXT NOT NULL, history INTEGER NOT NULL,
        config TEXT NOT NULL, status TEXT NOT NULL, stop_reason TEXT, error TEXT,
        usage TEXT NOT NULL
    )""",
    """CREATE TABLE events (
        run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, at {real} NOT NULL,
        kind TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq)
    )""",
    "CREATE INDEX runs_by_created ON runs(created)",
]
OLD_RUN = (
    "old", 1.0, 2.0, "scripted", "My order number is A1.", 0, json.dumps({"model": "scripted"}),
    "answered", "end_turn", None, json.dumps({"requests": 1}),
)  # fmt: skip
OLD_EVENTS = [
    ("old", 0, 1.0, "message",
     json.dumps({"index": 0, "message": {"type": "user", "text": "My order number is A1."}})),
    ("old", 1, 1.5, "message",
     json.dumps({"index": 1, "message": {"type": "assistant", "text": "Noted."}})),
]  # fmt: skip


def make_version_1(store_url: str, tmp_path: Path) -> None:
    """A log with schema version 1 at `store_url`, holding one answered run, "old"."""
    if not store_url.startswith("postgresql://"):
        db = sqlite3.connect(store_url)
        for statement in VERSION_1:
            db.execute(statement.format(real="REAL"))
        db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", OLD_RUN)
        db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", OLD_EVENTS)
        db.execute("PRAGMA user_version=1")
        db.commit()
        db.close()
        return
    import psycopg

    conn: psycopg.Connection[Any]
    with psycopg.connect(store_url) as conn:
        conn.execute("CREATE TABLE steadyloop_schema (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO steadyloop_schema VALUES (1)")
        for statement in VERSION_1:
            conn.execute(statement.format(real="DOUBLE PRECISION"))
        conn.execute(
            "INSERT INTO runs VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", OLD_RUN
        )
        for event in OLD_EVENTS:
            conn.execute("INSERT INTO events VALUES (%s, %s, %s, %s, %s)", event)


def schema_version(store_url: str) -> int:
    if not store_url.startswith("postgresql://"):
        db = sqlite3.connect(store_url)
        (version,) = db.execute("PRAGMA user_version").fetchone()
        db.close()
        return int(version)
    import psycopg

    with psycopg.connect(store_url) as conn:
        row = conn.execute("SELECT version FROM steadyloop_schema").fetchone()
    assert row is not None
    return int(row[0])


def test_a_version_1_log_is_upgraded_and_its_runs_go_on_in_a_session(
    store_url: str, tmp_path: Path
) -> None:
    make_version_1(store_url, tmp_path)
    with pytest.raises(ConfigError, match="older schema"):
        open_store(store_url, read_only=True)
    model = ScriptedModel(["Your order number is A1."])
    agent = Agent(model, store=store_url)
    assert agent.store is not None
    assert schema_version(store_url) == SCHEMA_VERSION
    old = agent.store.run("old")
    assert (old.session, old.previous_run_id, old.parent_run_id, old.parent_call_id) == (
        None, None, None, None,
    )  # fmt: skip
    result = agent.run_sync("What was my order number?", session="s", fork_from="old")
    assert [getattr(m, "text", None) for m in model.requests[0].messages] == [
        "My order number is A1.", "Noted.", "What was my order number?",
    ]  # fmt: skip
    assert [r.id for r in agent.store.session("s")] == [result.run_id]
    agent.close_store()
    reader = open_store(store_url, read_only=True)  # upgraded: readers open it now
    assert reader.run(str(result.run_id)).previous_run_id == "old"
    reader.close()
