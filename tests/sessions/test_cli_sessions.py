"""The command line's sessions: `run --session`, `run -c`, `logs --session`, `show`'s links, and
`chat` through a pipe and through a pseudo-terminal (Ctrl-C mid-turn, Ctrl-D)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from steadyloop.store import open_store
from support.cli import run_cli
from support.processes import python_env

GATED = """
from steadyloop import tool

@tool(approve=True)
def refund(order: str) -> str:
    '''Refunds an order.'''
    return f"refunded {order}"
"""

# The second call of `work` waits (for two minutes) after touching `in-tool` beside this file.
SLOW = """
import asyncio
from pathlib import Path
from steadyloop import tool

HERE = Path(__file__).parent

@tool
async def work(task: str) -> str:
    '''Does the work.'''
    count = HERE / "count"
    n = int(count.read_text()) if count.exists() else 0
    count.write_text(str(n + 1))
    if n == 1:
        (HERE / "in-tool").touch()
        await asyncio.sleep(120)
    return f"done {n}"
"""


@pytest.fixture(autouse=True)
def no_default_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model comes from the command line or the log, never from the environment."""
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)


def ids(capsys: pytest.CaptureFixture[str], store: str, session: str) -> list[str]:
    code, out, _ = run_cli(capsys, "logs", "--session", session, "--store", store)
    assert code == 0
    return [line.split()[0] for line in out.splitlines()[1:]]


def test_run_session_goes_on_with_the_sessions_model_and_logs_list_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    code, out, err = run_cli(capsys, "run", "--model", "test", "--session", "s", "--store", store,
                             "My order is A1.")  # fmt: skip
    assert code == 0, err
    code, out, err = run_cli(capsys, "run", "--session", "s", "--store", store, "Which order?")
    assert (code, out.strip()) == (0, "(test model) You said: Which order?"), err
    first, second = ids(capsys, store, "s")
    code, out, _ = run_cli(capsys, "show", second, "--store", store)
    assert f"session s · run 2 of 2 · previous run {first}" in out
    assert "user: My order is A1." in out  # the history it continued
    code, out, _ = run_cli(capsys, "logs", "--session", "nobody", "--store", store)
    assert (code, out.strip()) == (0, "no runs in session nobody")


def test_run_continue_goes_on_with_the_newest_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    code, _, err = run_cli(capsys, "run", "-c", "--store", store, "hello")
    assert code == 1
    assert err.count("\n") == 1
    assert "no run to continue" in err
    assert "Traceback" not in err
    assert run_cli(capsys, "run", "--model", "test", "--store", store, "first")[0] == 0
    code, _, err = run_cli(capsys, "run", "-c", "--store", store, "second")
    assert code == 0, err
    log = open_store(store, read_only=True)
    newest, oldest = log.runs()
    log.close()
    assert (newest.session, newest.previous_run_id) == (None, oldest.id)
    code, out, _ = run_cli(capsys, "show", newest.id, "--store", store)
    assert f"continues previous run {oldest.id[:12]}" in out
    code, _, err = run_cli(
        capsys, "run", "--model", "test", "--session", "s", "--store", store, "x"
    )
    assert code == 0, err
    assert run_cli(capsys, "run", "--continue", "--store", store, "y")[0] == 0
    assert len(ids(capsys, store, "s")) == 2  # -c joined the newest run's session


def test_continue_with_a_session_or_without_a_log_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = str(tmp_path / "runs.db")
    assert run_cli(capsys, "run", "-c", "--session", "s", "--store", store, "x")[0] == 2
    assert run_cli(capsys, "run", "-c", "--no-log", "--model", "test", "x")[0] == 2
    assert run_cli(capsys, "run", "--session", "s", "--no-log", "--model", "test", "x")[0] == 2


def test_a_session_waiting_for_approval_is_refused_naming_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store, tools = str(tmp_path / "runs.db"), tmp_path / "gated.py"
    tools.write_text(GATED)
    code, _, err = run_cli(capsys, "run", "--model", "test", "--tools", str(tools), "--session",
                           "s", "--store", store, "refund A1")  # fmt: skip
    assert code == 4, err
    (paused,) = ids(capsys, store, "s")
    code, _, err = run_cli(capsys, "run", "--session", "s", "--store", store, "thanks")
    assert code == 1
    assert paused in err
    assert "steadyloop resume" in err
    assert len(ids(capsys, store, "s")) == 1


def chat(store: str, *args: str, lines: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "steadyloop", "chat", "--store", store, *args],
        input=lines, capture_output=True, text=True, timeout=120, env=python_env(),
    )  # fmt: skip


def test_chat_reads_one_prompt_a_line_from_a_pipe(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    done = chat(store, "--model", "test", lines="hello\n\n   \nand again\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "(test model) You said: hello", "(test model) You said: and again",
    ]  # fmt: skip
    session = done.stderr.splitlines()[0].removeprefix("session ")
    assert session.startswith("chat-")
    assert len(session) == len("chat-") + 12
    log = open_store(store, read_only=True)
    runs = log.session(session)
    log.close()
    assert [r.prompt for r in runs] == ["hello", "and again"]
    assert runs[1].previous_run_id == runs[0].id
    again = chat(store, "--session", session, lines="third\n")  # the model from the session
    assert again.returncode == 0, again.stderr


def test_chat_from_a_pipe_stops_at_a_gated_call(tmp_path: Path) -> None:
    store, tools = str(tmp_path / "runs.db"), tmp_path / "gated.py"
    tools.write_text(GATED)
    done = chat(store, "--model", "test", "--tools", str(tools), "--session", "s",
                lines="refund A1\nnever read\n")  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert "waiting for approval:" in done.stderr
    assert "refund(" in done.stderr
    log = open_store(store, read_only=True)
    assert [r.prompt for r in log.session("s")] == ["refund A1"]
    log.close()


def read_until(leader: int, wanted: bytes, seen: bytearray) -> None:
    """Reads the terminal until `wanted` shows up in what it printed since `seen` was empty."""
    deadline = time.monotonic() + 60
    while wanted not in seen:
        assert time.monotonic() < deadline, f"no {wanted!r} in {bytes(seen)!r}"
        ready, _, _ = select.select([leader], [], [], 1)
        if ready:
            try:
                seen.extend(os.read(leader, 4096))
            except OSError:
                break


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_chat_on_a_terminal_ctrl_c_stops_the_turn_and_ctrl_d_leaves(tmp_path: Path) -> None:
    import fcntl
    import pty
    import termios

    store, tools = str(tmp_path / "runs.db"), tmp_path / "slow.py"
    tools.write_text(SLOW)
    leader, follower = pty.openpty()

    def controlling_terminal() -> None:  # so Ctrl-C typed on it interrupts the chat
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    with subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "chat", "--model", "test", "--tools", str(tools),
         "--session", "s", "--store", store],
        stdin=follower, stdout=subprocess.PIPE, stderr=follower, env=python_env(),
        preexec_fn=controlling_terminal,
    ) as proc:  # fmt: skip
        os.close(follower)
        seen = bytearray()
        try:
            read_until(leader, b"> ", seen)
            os.write(leader, b"first\n")
            read_until(leader, b"> ", seen := bytearray())
            os.write(leader, b"second\n")
            while not (tmp_path / "in-tool").exists():
                assert proc.poll() is None
                time.sleep(0.05)
            os.write(leader, b"\x03")  # Ctrl-C, as typed
            read_until(leader, b"stopped this turn", seen := bytearray())
            read_until(leader, b"> ", seen)
            os.write(leader, b"third\n")
            read_until(leader, b"> ", seen := bytearray())
            os.write(leader, b"\x04")  # Ctrl-D at the prompt
            out, _ = proc.communicate(timeout=60)
        finally:
            proc.kill()
            os.close(leader)
    assert proc.returncode == 0
    answers = [line for line in out.decode().splitlines() if line.startswith("(test model)")]
    assert [a.split(":")[-1].strip() for a in answers] == ["first", "third"]
    log = open_store(store, read_only=True)
    runs = log.session("s")
    log.close()
    assert [(r.prompt, r.status) for r in runs] == [
        ("first", "answered"), ("second", "interrupted"), ("third", "answered"),
    ]  # fmt: skip
    assert runs[2].previous_run_id == runs[1].id
