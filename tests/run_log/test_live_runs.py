"""A run that is still going in another process is never resumed under it; a run whose process
died resumes at once, whatever status it left behind."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from run_log.run_log_helpers import calls, finish, start_run, wait_for
from steadyloop import Agent, ConfigError
from steadyloop.store import RunStore


def test_resume_of_a_run_live_in_another_process_is_refused(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    live = start_run(store_path, "block")
    try:
        wait_for(lambda: (tmp_path / "charging").exists())
        store = RunStore(store_path)
        (run,) = store.runs()
        with pytest.raises(ConfigError, match="still running"):
            asyncio.run(Agent("test", store=store).resume(run.id))
        (tmp_path / "release").touch()
        code, _, err = finish(live)
    finally:
        if live.poll() is None:
            live.kill()
            live.wait()
    # The live run was left alone: it finished, its charge made once and logged.
    assert code == 0, err
    assert calls(tmp_path).count("charge") == 1
    assert store.run(run.id).status == "answered"


def test_a_killed_process_frees_its_run_for_resume(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    live = start_run(store_path, "block")
    wait_for(lambda: (tmp_path / "charging").exists())
    live.send_signal(signal.SIGKILL)
    finish(live)
    (run,) = RunStore(store_path).runs()
    assert run.status == "running"  # what the dead process left behind
    code, out, err = finish(start_run(store_path, "resume", run.id))
    assert code == 0, err
    assert "all done" in out
