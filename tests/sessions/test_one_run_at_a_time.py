"""Two runs of one session never overlap: the second waits, then continues from the first's
whole transcript; in two threads with their own connections, and in two processes. A process
killed inside a session never blocks it. On SQLite and on a real Postgres."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from steadyloop import Agent, AssistantMessage, Message, UserMessage
from steadyloop.store import open_store
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec
from support.processes import python_env

TURN = Path(__file__).with_name("session_turn.py")


def wait_for(path: Path, process: subprocess.Popen[str] | None = None) -> None:
    """Returns once `path` exists (the process, if given, must still be running meanwhile)."""
    deadline = time.monotonic() + 60
    while not path.exists():
        assert process is None or process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def finish(process: subprocess.Popen[str]) -> int:
    """Waits for the process to end (its pipes read and closed); its exit code."""
    out, err = process.communicate(timeout=120)
    assert process.returncode in (0, -signal.SIGKILL), out + err
    return process.returncode


def turn(store_url: str, prompt: str, folder: Path, mode: str) -> subprocess.Popen[str]:
    """`session_turn.py` (see there) on session "s"."""
    return subprocess.Popen(
        [sys.executable, str(TURN), store_url, "s", prompt, str(folder), mode],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=python_env(),
    )  # fmt: skip


def test_two_threads_with_their_own_connections_take_turns(store_url: str) -> None:
    first_in_model, release = threading.Event(), threading.Event()
    views: dict[str, list[str]] = {}

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        prompt = [m.text for m in messages if isinstance(m, UserMessage)][-1]
        views[prompt] = [
            m.text for m in messages if isinstance(m, UserMessage | AssistantMessage) and m.text
        ]
        if prompt == "first":
            first_in_model.set()
            assert release.wait(60)
        return AssistantMessage(f"answer to {prompt}")

    logs = [open_store(store_url), open_store(store_url)]
    agents = [Agent(FunctionModel(reply), store=log) for log in logs]
    first = threading.Thread(target=agents[0].run_sync, args=("first",), kwargs={"session": "s"})
    second = threading.Thread(target=agents[1].run_sync, args=("second",), kwargs={"session": "s"})
    first.start()
    assert first_in_model.wait(60)
    second.start()
    second.join(0.5)
    assert second.is_alive()
    assert "second" not in views
    release.set()
    first.join(60)
    second.join(60)
    assert views["second"] == ["first", "answer to first", "second"]
    runs = logs[0].session("s")
    assert [r.prompt for r in runs] == ["first", "second"]
    assert runs[1].previous_run_id == runs[0].id
    for log in logs:
        log.close()


def test_two_processes_take_turns(store_url: str, tmp_path: Path) -> None:
    first = turn(store_url, "first", tmp_path, "hold")
    wait_for(tmp_path / "first.in-model", first)
    second = turn(store_url, "second", tmp_path, "answer")
    with contextlib.suppress(subprocess.TimeoutExpired):
        second.wait(1)
    assert second.poll() is None
    assert not (tmp_path / "second.seen").exists()
    (tmp_path / "release").touch()
    assert finish(first) == 0
    assert finish(second) == 0
    seen = (tmp_path / "second.seen").read_text().splitlines()
    assert seen == ["first", "answer to first", "second"]
    log = open_store(store_url, read_only=True)
    assert [r.prompt for r in log.session("s")] == ["first", "second"]
    log.close()


def test_a_run_killed_inside_a_session_is_resumed_and_the_session_goes_on(
    store_url: str, tmp_path: Path
) -> None:
    assert finish(turn(store_url, "first", tmp_path, "answer")) == 0
    assert finish(turn(store_url, "second", tmp_path, "kill")) == -signal.SIGKILL
    assert finish(turn(store_url, "-", tmp_path, "resume-latest")) == 0
    assert finish(turn(store_url, "third", tmp_path, "answer")) == 0
    assert (tmp_path / "third.seen").read_text().splitlines() == [
        "first", "answer to first", "second", "answer to second", "third",
    ]  # fmt: skip
    log = open_store(store_url, read_only=True)
    runs = log.session("s")
    assert [(r.prompt, r.status) for r in runs] == [
        ("first", "answered"), ("second", "answered"), ("third", "answered"),
    ]  # fmt: skip
    log.close()
