"""The command line, driven through `main([...])` and as a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from steadyloop import Agent
from steadyloop.output import EMPTY_REPLY_TEXT
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel
from support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "support_tickets.py"
HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)
    return tmp_path / "home"


def test_run_answers_offline_and_logs_the_run(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    code, out, err = run_cli(capsys, "run", "--tools", str(EXAMPLE), "--model", "test", "refunds?")
    assert code == 0
    assert "count_tickets_by_status [ok]" in out
    assert "turn 1" in err  # the plain live view goes to stderr, not into the answer
    assert "turn 1" not in out
    runs = RunStore(home / "runs.db").runs()
    assert [r.status for r in runs] == ["answered"]
    assert runs[0].usage.tool_calls == 3


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "run", "--model", "test", "--json", "hello")
    assert code == 0
    data = json.loads(out)
    assert data["stop_reason"] == "end_turn"
    assert data["output"] == "(test model) You said: hello"
    assert data["run_id"]


def test_turn_limit_exits_3_with_the_partial_answer(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys, "run", "--tools", str(EXAMPLE), "--model", "test", "--max-turns", "1", "x"
    )
    assert code == 3
    assert "turn limit reached: 1 model calls" in err


@pytest.mark.parametrize("options", [[], ["--json"]])
def test_a_limit_stop_is_printed_once(
    capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    code, out, err = run_cli(
        capsys, "run", "--tools", str(EXAMPLE), "--model", "test", "--max-turns", "1", *options, "x"
    )
    assert code == 3
    assert err.count("turn limit reached") == 1
    if options:
        assert json.loads(out)["stopped"] == "turn limit reached: 1 model calls"


PRICE_TOOLS = '''
from cli_pricing import price_of
from steadyloop import tool


@tool
def get_price(item: str) -> str:
    """Looks up an item's price; use it when asked what something costs.

    Returns the price with its currency, like '3 EUR'.

    Args:
        item: the item's name, like 'apple'.
    """
    return price_of(item)
'''


def test_run_and_lint_load_a_tools_file_that_imports_a_module_next_to_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", [*sys.path])
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "cli_pricing.py").write_text("def price_of(item: str) -> str:\n    return '3 EUR'\n")
    tools = folder / "agent_tools.py"
    tools.write_text(PRICE_TOOLS)

    code, out, err = run_cli(capsys, "run", "--tools", str(tools), "--model", "test", "price?")
    assert code == 0, err
    assert "get_price [ok]: 3 EUR" in out

    code, out, err = run_cli(capsys, "lint", str(tools))
    assert code == 0, err
    assert "get_price: 100/100" in out


def test_missing_model_is_one_line_naming_what_to_set(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "STEADYLOOP_MODEL" in err
    assert "--model test" in err


def test_missing_key_names_the_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = run_cli(capsys, "run", "--model", "openai:gpt-4.1-mini", "hello")
    assert code == 1
    assert "OPENAI_API_KEY" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("", "defines no tools"),
        ("raise RuntimeError('boom')\n", "raised RuntimeError on import: boom"),
        (
            "from steadyloop import tool\n@tool\ndef a() -> str:\n    '''A.'''\n    return ''\n"
            "@tool(name='a')\ndef b() -> str:\n    '''B.'''\n    return ''\n",
            "'a'",
        ),
    ],
)
def test_bad_tools_files_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str, expected: str
) -> None:
    file = tmp_path / "tools.py"
    file.write_text(source)
    code, _, err = run_cli(capsys, "run", "--model", "test", "--tools", str(file), "hi")
    assert code == 1
    assert expected in err
    assert "Traceback" not in err
    assert err.startswith("error: ")


def test_unknown_run_id(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("show", "replay", "export"):
        code, _, err = run_cli(capsys, command, "doesnotexist")
        assert code == 1, command
        assert "no run log at" in err  # and none was created
    for command in ("resume", "show", "replay", "export"):
        code, _, err = run_cli(capsys, command, "doesnotexist")
        assert code == 1, command
        assert "no run 'doesnotexist'" in err


def test_corrupt_log_is_reported_and_left_alone(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    home.mkdir(parents=True)
    (home / "runs.db").write_bytes(b"this is not a database" * 100)
    code, _, err = run_cli(capsys, "logs")
    assert code == 1
    assert "cannot open the run log" in err
    assert (home / "runs.db").read_bytes() == b"this is not a database" * 100


def test_newer_schema_is_refused(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    run_cli(capsys, "run", "--model", "test", "hello")
    with sqlite3.connect(home / "runs.db") as db:
        db.execute("PRAGMA user_version=99")
    code, _, err = run_cli(capsys, "logs")
    assert code == 1
    assert "schema version 99" in err
    assert "upgrade steadyloop" in err


def test_prompt_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin\n"))
    code, out, _ = run_cli(capsys, "run", "--model", "test", "-")
    assert code == 0
    assert "You said: from stdin" in out
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run_cli(capsys, "run", "--model", "test", "-")
    assert code == 2
    assert "empty" in err


def test_logs_show_export_import(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run_cli(capsys, "run", "--tools", str(EXAMPLE), "--model", "test", "refunds?")
    code, out, _ = run_cli(capsys, "logs")
    assert code == 0
    run_id = out.splitlines()[1].split()[0]
    code, out, _ = run_cli(capsys, "show", run_id)
    assert "assistant → get_ticket" in out
    assert "tool ✗ error get_ticket" in out
    code, out, _ = run_cli(capsys, "show", run_id, "--json")
    assert json.loads(out)["run"]["status"] == "answered"
    export = tmp_path / "run.jsonl"
    assert run_cli(capsys, "export", run_id, "-o", str(export))[0] == 0
    # The run's own export is already there: importing it again changes nothing.
    code, out, _ = run_cli(capsys, "import", str(export))
    assert code == 0
    assert out.strip().startswith(run_id)
    code, out, _ = run_cli(capsys, "import", "--store", str(tmp_path / "other.db"), str(export))
    assert code == 0
    code, out, _ = run_cli(capsys, "logs", "--store", str(tmp_path / "other.db"))
    assert run_id in out


def test_show_marks_truncated_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    file = tmp_path / "big.py"
    file.write_text(
        "from steadyloop import tool\n@tool\ndef dump_log() -> str:\n"
        "    '''Returns the whole log.'''\n    return 'x' * 20_000\n"
    )
    run_cli(
        capsys, "run", "--tools", str(file), "--model", "test", "--max-tool-output", "100", "go"
    )
    run_id = run_cli(capsys, "logs")[1].splitlines()[1].split()[0]
    out = run_cli(capsys, "show", run_id)[1]
    assert "[truncated: 20,000 characters" in out
    assert "[19900 characters omitted]" in out
    full = run_cli(capsys, "show", run_id, "--full")[1]
    assert "x" * 20_000 in full


def test_show_marks_an_empty_reply_and_the_instruction_that_followed(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    home.mkdir()
    store = RunStore(home / "runs.db")
    run_id = Agent(ScriptedModel(["", "an answer"]), store=store).run_sync("go").run_id
    store.close()
    assert run_id is not None
    out = run_cli(capsys, "show", run_id)[1]
    lines = out.splitlines()
    empty = lines.index("assistant: [empty reply: no text and no tool calls]")
    assert lines[empty + 1] == f"user: {EMPTY_REPLY_TEXT}"
    assert "assistant: an answer" in lines[empty + 2 :]


def test_replay_reports_a_divergence(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    file = tmp_path / "clock.py"
    file.write_text(
        "import itertools\nfrom pathlib import Path\nfrom steadyloop import tool\n"
        "_n = itertools.count()\n@tool\n"
        "def tick() -> int:\n    '''Counts up.'''\n"
        "    return next(_n) + int(Path(__file__ + '.n').read_text())\n"
    )
    Path(str(file) + ".n").write_text("0")
    run_cli(capsys, "run", "--tools", str(file), "--model", "test", "go")
    run_id = run_cli(capsys, "logs")[1].splitlines()[1].split()[0]
    code, out, _ = run_cli(capsys, "replay", run_id)
    assert code == 0
    assert "matches the log" in out
    Path(str(file) + ".n").write_text("5")
    code, out, _ = run_cli(capsys, "replay", run_id)
    assert code == 1
    assert "entry 2 differs" in out
    code, out, _ = run_cli(capsys, "replay", run_id, "--recorded-tools")
    assert code == 0


def test_python_dash_m_entry_point(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "steadyloop", "run", "--model", "test", "hi"],
        capture_output=True, text=True, timeout=60, env={**os.environ},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(test model) You said: hi"


def _wait_for(predicate: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def test_kill_9_mid_tool_then_resume(home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "RESUME_DIR": str(tmp_path)}
    calls = tmp_path / "calls.log"
    with subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "run", "--tools", str(HERE / "resume_tools.py"),
         "--model", "test", "do it"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) as proc:  # fmt: skip
        try:
            _wait_for(lambda: calls.exists() and len(calls.read_text().split()) == 3)
            # record_fast has finished once it wrote its line and returned; give the log a moment
            time.sleep(0.3)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            proc.kill()
    store = RunStore(home / "runs.db")
    (run,) = store.runs()
    assert run.status == "running"  # killed: nothing could mark it
    (tmp_path / "release").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "steadyloop", "resume", run.id[:10]],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    executed = calls.read_text().split()
    assert executed.count("record_fast") == 1  # finished before the kill: not run again
    assert executed.count("fetch_slow") == 2  # idempotent: run again
    assert executed.count("charge_slow") == 1  # may have had effects: not run again
    assert "record_fast [ok]: fast done" in done.stdout
    assert "fetch_slow [ok]: fetched" in done.stdout
    assert "charge_slow [error]: interrupted" in done.stdout
    assert store.run(run.id).status == "answered"


def test_ctrl_c_mid_tool_exits_130_and_can_resume(home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "RESUME_DIR": str(tmp_path)}
    calls = tmp_path / "calls.log"
    with subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "run", "--tools", str(HERE / "resume_tools.py"),
         "--model", "test", "do it"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            _wait_for(lambda: calls.exists() and len(calls.read_text().split()) == 3)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
        finally:
            proc.kill()
    assert proc.returncode == 130
    assert "interrupted; continue with: steadyloop resume" in err
    (run,) = RunStore(home / "runs.db").runs()
    assert run.status == "interrupted"
    (tmp_path / "release").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "steadyloop", "resume", run.id],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Ctrl-C left the slow calls' outcomes unknown: the idempotent fetch runs again, the
    # charge is not repeated but reported as interrupted.
    assert "charge_slow [error]: interrupted" in done.stdout
    assert "fetch_slow [ok]: fetched" in done.stdout
    assert calls.read_text().split().count("charge_slow") == 1
    assert calls.read_text().split().count("fetch_slow") == 2


def test_tools_from_an_mcp_server_on_the_command_line(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    server = Path(sys.executable).parent / "mcp-server-time"
    code, out, err = run_cli(capsys, "run", "--mcp", str(server), "--model", "test", "time?")
    assert code == 0, err
    assert "- get_current_time [" in out
    assert "- convert_time [" in out
    (run,) = RunStore(home / "runs.db").runs()
    assert run.config["mcp"] == [str(server)]
