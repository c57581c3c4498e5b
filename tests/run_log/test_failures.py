"""A failed write stops only its own run, with one line that names it and says what to do;
the log recovers once the cause is gone; a damaged or newer log is refused before it is
touched; readers never create a log and can read one in a folder they cannot write."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
from pathlib import Path

import pytest

from steadyloop import Agent, AssistantMessage, ConfigError, RunLogError, ToolCall, tool
from steadyloop.cli import main
from steadyloop.store import SCHEMA_VERSION, RunStore
from steadyloop.testing import ScriptedModel


async def test_a_full_disk_fails_only_the_run_whose_write_does_not_fit(
    small_disk: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    store = RunStore(small_disk / "runs.db")
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (3 * 1024 * 1024))  # about 1 MB is left
    big_started, small_may_finish = asyncio.Event(), asyncio.Event()

    @tool(max_output=100)
    async def export_report() -> str:
        """Returns a very large report."""
        big_started.set()
        return "x" * 2_000_000  # kept whole in the log: more than the disk has left

    @tool
    async def ping() -> str:
        """Answers pong."""
        await small_may_finish.wait()
        return "pong"

    big = Agent(
        ScriptedModel([AssistantMessage(tool_calls=(ToolCall("r", "export_report", "{}"),)),
                       "unreachable"]),
        tools=[export_report], store=store,
    )  # fmt: skip
    small = Agent(
        ScriptedModel([AssistantMessage(tool_calls=(ToolCall("p", "ping", "{}"),)), "pong!"]),
        tools=[ping], store=store,
    )  # fmt: skip
    small_task = asyncio.create_task(small.run("ping"))
    with pytest.raises(RunLogError) as failure:
        await big.run("report")
    small_may_finish.set()
    assert (await small_task).output == "pong!"  # the other run went on

    message = str(failure.value)
    run_id = failure.value.run_id
    assert run_id is not None
    assert run_id in message
    assert "\n" not in message
    assert f"steadyloop resume {run_id}" in message
    assert store.run(run_id).status == "error"
    # Nothing leaked to stderr from the writer thread.
    assert capsys.readouterr().err == ""
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]

    # Once there is room again, the failed run resumes from what was committed.
    filler.unlink()
    big.model = ScriptedModel(["report sent"])
    resumed = await big.resume(run_id)
    assert resumed.output == "report sent"
    store.close()


def test_a_log_from_a_newer_version_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="newer than this steadyloop"):
        RunStore(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db"]  # not switched to WAL


def test_a_damaged_log_is_a_clear_error_not_a_sqlite_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path))
    agent = Agent("test", store=tmp_path / "runs.db")
    agent.run_sync("hello")
    agent.close_store()
    data = bytearray((tmp_path / "runs.db").read_bytes())
    data[4096:8192] = b"\xff" * 4096  # the second page: the runs table
    (tmp_path / "runs.db").write_bytes(bytes(data))
    assert main(["logs"]) == 1
    err = capsys.readouterr().err
    assert "run log" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_readers_never_create_a_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    assert main(["logs"]) == 0
    assert "no runs" in capsys.readouterr().out
    assert main(["show", "abc"]) == 1
    assert "no run log" in capsys.readouterr().err
    assert not (tmp_path / "home").exists()


def test_logs_and_show_read_a_log_in_a_read_only_folder(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(small_disk))
    agent = Agent("test", store=small_disk / "runs.db")
    run_id = agent.run_sync("hello").run_id
    assert run_id is not None
    agent.close_store()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    assert main(["logs"]) == 0
    assert run_id[:12] in capsys.readouterr().out
    assert main(["show", run_id]) == 0
    assert "hello" in capsys.readouterr().out
