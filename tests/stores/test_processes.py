"""Processes sharing a run log: killed mid-run, opening a fresh log together, losing their
database connection; on SQLite and on a real Postgres."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from steadyloop import Agent, AssistantMessage, ToolCall, ToolResult, tool
from steadyloop.store import open_store
from steadyloop.testing import FunctionModel
from support.postgres import new_database

SCRIPTED_RUN = Path(__file__).resolve().parents[1] / "run_log" / "scripted_run.py"


def run_script(store_url: str, calls_folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`scripted_run.py` (see there) with the log at `store_url`, its calls noted in a folder."""
    return subprocess.run(
        [sys.executable, str(SCRIPTED_RUN), store_url, *args, "--calls", str(calls_folder)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_kill_mid_run_repeats_no_finished_call(store_url: str, tmp_path: Path) -> None:
    killed = run_script(store_url, tmp_path, "kill-in-model")
    assert killed.returncode == -signal.SIGKILL
    log = open_store(store_url)
    (run,) = log.runs()
    log.close()
    resumed = run_script(store_url, tmp_path, "resume", run.id)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["charge", "lookup"]
    log = open_store(store_url, read_only=True)
    answers = [m.content for m in log.messages(run.id) if isinstance(m, ToolResult)]
    log.close()
    assert answers == ["charged 5", "order A7 is open"]


OPEN_AND_RUN = """
import sys, time
from pathlib import Path
from steadyloop import Agent
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
print(Agent("test", store=sys.argv[1]).run_sync("hello").run_id)
"""


def test_processes_opening_a_fresh_log_at_once_all_work(store_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    command = [sys.executable, "-c", OPEN_AND_RUN, store_url, str(go)]
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    go.touch()
    outcomes = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=120)
            outcomes.append((process.returncode, out.strip(), err))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert [(code, err) for code, _, err in outcomes] == [(0, "")] * 4
    log = open_store(store_url, read_only=True)
    assert {r.id for r in log.runs()} == {out for _, out, _ in outcomes}
    log.close()


def test_a_dropped_database_connection_mid_run_loses_nothing(postgres_server: object) -> None:
    import psycopg

    store_url = new_database(postgres_server)

    def drop_connections() -> None:
        with psycopg.connect(store_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )

    @tool
    def step(n: int) -> str:
        """Does a step; the second one cuts every connection to the database first."""
        if n == 1:
            drop_connections()
        return f"step {n} done"

    def reply(messages: object, tools: object) -> AssistantMessage:
        assert isinstance(messages, tuple)
        turn = sum(isinstance(m, AssistantMessage) for m in messages)
        if turn == 3:
            return AssistantMessage("all done")
        return AssistantMessage(tool_calls=(ToolCall(f"s{turn}", "step", f'{{"n": {turn}}}'),))

    agent = Agent(FunctionModel(reply), tools=[step], store=store_url)
    result = agent.run_sync("go", run_id="through-a-drop")
    agent.close_store()
    assert result.output == "all done"
    log = open_store(store_url, read_only=True)
    assert log.messages("through-a-drop") == result.messages
    assert log.run("through-a-drop").status == "answered"
    log.close()
