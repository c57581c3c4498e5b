"""A store is released when its agent is closed, collected or the interpreter exits: no thread
or file descriptor outlives it, and the log is one self-contained file afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from steadyloop import Agent


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def writer_threads() -> int:
    return sum(t.name == "steadyloop-log-writer" for t in threading.enumerate())


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_async_with_releases_the_log(tmp_path: Path) -> None:
    before_threads, before_files = writer_threads(), open_files()
    async with Agent("test", store=tmp_path / "runs.db") as agent:
        await agent.run("hello")
    assert writer_threads() == before_threads
    assert open_files() == before_files
    # Checkpointed and closed: no write-ahead log or shared-memory file is left beside it.
    assert files_in(tmp_path) == ["runs.db", "runs.db-lock"]


async def test_a_closed_agent_opens_its_log_again_for_the_next_run(tmp_path: Path) -> None:
    agent = Agent("test", store=tmp_path / "runs.db")
    first = await agent.run("one")
    await agent.aclose()
    second = await agent.run("two")
    await agent.aclose()
    assert agent.store is not None
    assert [r.id for r in agent.store.runs()] == [second.run_id, first.run_id]


MANY_AGENTS = """
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
from steadyloop import Agent
for number in range(300):
    Agent("test", store=sys.argv[1]).run_sync(f"run {number}")
print("done")
"""


def test_agents_never_closed_do_not_run_out_of_files(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", MANY_AGENTS, str(tmp_path / "runs.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "done", "")


EXIT_WITHOUT_CLOSING = """
import sys
from steadyloop import Agent
agent = Agent("test", store=sys.argv[1])
agent.run_sync("hello")
"""


def test_interpreter_exit_closes_the_log(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-c", EXIT_WITHOUT_CLOSING, str(tmp_path / "runs.db")],
        check=True, timeout=60,
    )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db", "runs.db-lock"]
