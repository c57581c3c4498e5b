"""The config logged with each run: its JSON stays the same, and logs written by older versions
(fewer keys) still replay and rebuild their agent."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from steadyloop import Agent, AssistantMessage, Limits, ToolCall
from steadyloop.cli.setup import agent_from_config
from steadyloop.compaction import Compaction
from steadyloop.replay import replay_run
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel
from steadyloop.tools import as_tool


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def summarise(messages: object) -> str:
    return "the sums so far"


def logged_run(path: Path) -> str:
    """A finished run that compacted once, logged to `path`; its id."""
    replies = [
        AssistantMessage(tool_calls=(ToolCall(f"c{i}", "add", f'{{"a": {i}, "b": 1}}'),))
        for i in range(8)
    ]
    agent = Agent(
        ScriptedModel([*replies, "done"], name="scripted"),
        tools=[add],
        instructions="add things",
        limits=Limits(max_turns=12, max_context_tokens=250),
        max_tool_output=500,
        tool_timeout=30.0,
        compaction=Compaction(keep_recent=2, trigger=0.5, summarise=summarise),
        metadata={"team": "billing"},
        store=path,
    )
    result = agent.run_sync("add some numbers")
    agent.close_store()
    assert result.output == "done"
    assert result.run_id is not None
    return result.run_id


def test_the_logged_config_keeps_its_json_format(tmp_path: Path) -> None:
    run_id = logged_run(tmp_path / "runs.db")
    store = RunStore(tmp_path / "runs.db")
    assert store.run(run_id).config == {
        "model": "scripted",
        "instructions": "add things",
        "limits": {
            "max_turns": 12,
            "max_context_tokens": 250,
            "max_repeats": 3,
            "max_cost_usd": None,
            "max_same_results": 3,
            "max_tool_calls": None,
        },
        "max_tool_output": 500,
        "tool_timeout": 30.0,
        "tools": ["add"],
        "compaction": {"keep_recent": 2, "trigger": 0.5},
        "team": "billing",
    }
    store.close()


async def test_a_log_with_an_older_config_replays_and_rebuilds_its_agent(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run_id = await asyncio.to_thread(logged_run, path)
    # An older version logged no tool_timeout, and limits without the later ones.
    older = {
        "model": "scripted",
        "instructions": "add things",
        "limits": {"max_turns": 12, "max_context_tokens": 250, "max_repeats": 3},
        "max_tool_output": 500,
        "tools": ["add"],
        "compaction": {"keep_recent": 2, "trigger": 0.5},
    }
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(older), run_id))
    db.close()
    store = RunStore(path)
    try:
        report = await replay_run(store, run_id, [as_tool(add)])
        assert report.divergence is None
        agent = agent_from_config(store.run(run_id).config, store, model="test")
        assert agent.limits == Limits(max_turns=12, max_context_tokens=250)
        assert (agent.instructions, agent.max_tool_output) == ("add things", 500)
    finally:
        store.close()
