"""A Postgres run log whose database ends its sessions (a failover, a restart, a pooler,
`pg_terminate_backend`, `idle_session_timeout`) while runs are live: a live run stays live, a run
taken over elsewhere stops without writing, and the next run simply works."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from steadyloop import Agent, AssistantMessage, RunLogError, ToolCall, ToolResult, tool
from steadyloop.store import open_store
from steadyloop.testing import ScriptedModel
from support.postgres import new_database

psycopg = pytest.importorskip("psycopg")

SCRIPTED_RUN = Path(__file__).resolve().parents[1] / "run_log" / "scripted_run.py"
OTHER_SESSIONS = (
    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)
CLAIMS = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
CLAIMING_SESSIONS = CLAIMS.replace("count(*)", "array_agg(pid)")


@pytest.fixture
def database(postgres_server: Any) -> str:
    return new_database(postgres_server)


def end_every_session(url: str) -> None:
    """Ends every session of the database but this one, and waits until they are gone."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(OTHER_SESSIONS)


def wait_for_claims(url: str, count: int) -> None:
    """Waits (up to 30 s) until `count` runs of the database hold their claim."""
    deadline = time.monotonic() + 30
    with psycopg.connect(url, autocommit=True) as admin:
        while admin.execute(CLAIMS).fetchone() != (count,):
            assert time.monotonic() < deadline, "the live run never claimed itself again"
            time.sleep(0.02)


def scripted(url: str, folder: Path, *args: str) -> list[str]:
    return [sys.executable, str(SCRIPTED_RUN), url, *args, "--calls", str(folder)]


def wait_for_file(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


def the_run(url: str) -> str:
    log = open_store(url, read_only=True)
    try:
        (run,) = log.runs()
        return run.id
    finally:
        log.close()


@pytest.fixture
def blocked_run(database: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A process whose run is inside its non-idempotent `charge` call until `release` exists."""
    process = subprocess.Popen(
        scripted(database, tmp_path, "block"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_file(tmp_path / "charging", process)
        yield process, the_run(database)
    finally:
        (tmp_path / "release").touch()
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_a_live_run_is_still_refused_to_others_after_every_session_ended(
    blocked_run: tuple[subprocess.Popen[str], str], database: str, tmp_path: Path
) -> None:
    first, run_id = blocked_run
    end_every_session(database)
    wait_for_claims(database, 1)  # the first process claimed its run again on a new session
    second = subprocess.run(
        scripted(database, tmp_path, "resume", run_id),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert second.returncode != 0
    assert f"run {run_id} is still running" in second.stderr
    (tmp_path / "release").touch()
    out, err = first.communicate(timeout=60)
    assert (first.returncode, out.split()[1:]) == (0, ["all", "done"]), err
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["charge", "lookup"]
    log = open_store(database, read_only=True)
    answers = [m.content for m in log.messages(run_id) if isinstance(m, ToolResult)]
    assert (log.run(run_id).status, answers) == ("answered", ["charged 5", "order A7 is open"])
    log.close()


async def test_a_run_taken_over_while_its_session_was_down_stops_and_writes_nothing(
    database: str, postgres_server: Any
) -> None:
    from steadyloop.store.postgres import claim_key

    started, finish = threading.Event(), threading.Event()
    charges: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charges the card: not safe to repeat."""
        started.set()
        finish.wait(60)
        charges.append(amount)
        return f"charged {amount}"

    reply = AssistantMessage(tool_calls=(ToolCall("c1", "charge", '{"amount": 5}'),))
    agent = Agent(ScriptedModel([reply, "all done"]), tools=[charge], store=database)
    running = asyncio.create_task(agent.run("charge", run_id="taken"))
    await asyncio.to_thread(started.wait, 60)
    with (
        psycopg.connect(database, autocommit=True) as other,
        psycopg.connect(postgres_server.get_uri(), autocommit=True) as admin,
    ):
        # Another process gets the run while this one cannot reach the database.
        name = other.info.dbname
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        other.execute(OTHER_SESSIONS)
        taken = other.execute("SELECT pg_try_advisory_lock(%s)", (claim_key("taken"),))
        assert taken.fetchone() == (True,)
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        # The first process's session comes back, finds the run taken and leaves it alone.
        finish.set()
        with pytest.raises(RunLogError, match="another process has taken it over"):
            await running
        log = open_store(database, read_only=True)
        assert [m for m in log.messages("taken") if isinstance(m, ToolResult)] == []
        assert log.run("taken").status == "running"  # as the other process left it
        log.close()
    resumed = await Agent(ScriptedModel(["noted"]), tools=[charge], store=database).resume("taken")
    assert charges == [5]  # ran once: the resumed run answers it "interrupted"
    (answer,) = [m for m in resumed.messages if isinstance(m, ToolResult)]
    assert answer.is_error
    assert "interrupted" in answer.content
    await agent.aclose()


def test_a_tool_working_longer_than_idle_session_timeout_keeps_its_run_live(
    database: str, tmp_path: Path
) -> None:
    with psycopg.connect(database, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {admin.info.dbname} SET idle_session_timeout = '300ms'")
    process = subprocess.Popen(
        scripted(database, tmp_path, "block"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_file(tmp_path / "charging", process)
        time.sleep(1.5)  # the tool works on: five idle timeouts pass
        second = subprocess.run(
            scripted(database, tmp_path, "resume", the_run(database)),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        (tmp_path / "release").touch()
        out, err = process.communicate(timeout=60)
    assert "is still running" in second.stderr
    assert (process.returncode, out.split()[1:]) == (0, ["all", "done"]), err
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["charge", "lookup"]


def test_the_next_run_after_every_session_ended_works(database: str) -> None:
    agent = Agent(ScriptedModel(["one", "two"]), store=database)
    assert agent.run_sync("first", run_id="r1").output == "one"
    end_every_session(database)
    assert agent.run_sync("second", run_id="r2").output == "two"
    agent.close_store()
    log = open_store(database, read_only=True)
    assert [(r.id, r.status) for r in log.runs()] == [("r2", "answered"), ("r1", "answered")]
    log.close()


class CutOffProxy:
    """A Unix-socket relay in front of the server. `cut()` closes the client side of every
    connection so far and leaves the server side open: what a network failure between them does
    (the server keeps the sessions until it notices)."""

    def __init__(self, url: str) -> None:
        server_folder = url.rpartition("host=")[2].partition("&")[0]
        self._server = f"{server_folder}/.s.PGSQL.5432"
        self._folder = tempfile.mkdtemp(prefix="pgcut-")  # short: socket paths are limited
        self.url = url.replace(f"host={server_folder}", f"host={self._folder}")
        self._listener = socket.socket(socket.AF_UNIX)
        self._listener.bind(f"{self._folder}/.s.PGSQL.5432")
        self._listener.listen()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._cut = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX)
            server.connect(self._server)
            self._pairs.append((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._relay, args=(source, sink), daemon=True).start()

    def _relay(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        if not self._cut:
            sink.close()  # an ordinary close, passed on

    def cut(self) -> None:
        self._cut = True
        for client, _ in self._pairs:
            client.shutdown(socket.SHUT_RDWR)
            client.close()

    def close(self) -> None:
        self._listener.close()
        for client, server in self._pairs:
            client.close()
            server.close()


def test_a_session_cut_off_by_the_network_is_ended_and_its_claims_taken_back(
    database: str, tmp_path: Path
) -> None:
    proxy = CutOffProxy(database)
    process = subprocess.Popen(
        scripted(proxy.url, tmp_path, "block"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_file(tmp_path / "charging", process)
        run_id = the_run(database)
        with psycopg.connect(database, autocommit=True) as admin:
            (before,) = admin.execute(CLAIMING_SESSIONS).fetchone()
            proxy.cut()  # the old session lives on in the server, holding the claim
            deadline = time.monotonic() + 30
            while (now := admin.execute(CLAIMING_SESSIONS).fetchone()[0]) in (before, None):
                assert time.monotonic() < deadline, "the claim never moved to a new session"
                time.sleep(0.02)
        assert len(now) == 1
        second = subprocess.run(
            scripted(database, tmp_path, "resume", run_id),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert f"run {run_id} is still running" in second.stderr
    finally:
        (tmp_path / "release").touch()
        out, err = process.communicate(timeout=60)
        proxy.close()
    assert (process.returncode, out.split()[1:]) == (0, ["all", "done"]), err
    assert sorted((tmp_path / "calls.log").read_text().split()) == ["charge", "lookup"]
