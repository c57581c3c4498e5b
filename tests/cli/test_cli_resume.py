"""Resuming a paused run from the command line, whoever paused it: a run made by `steadyloop run`,
one paused from Python, and one whose tools cannot be rebuilt (refused, and left paused). Also
the library's side of it: the tool check before any decision is used, run ids by prefix, and
`if_exists` on a paused run."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from steadyloop import Agent, Approve, ConfigError, tool
from steadyloop.agent import IfExists
from steadyloop.store import RunStore
from steadyloop.testing import TestModel
from support.cli import run_cli

SHOP = '''
from pathlib import Path

from steadyloop import Agent, tool
from steadyloop.testing import TestModel

EFFECTS = Path(__file__).with_name("effects.log")


@tool(approve=True)
def issue_refund(order_id: str, amount: float) -> str:
    """Refunds an order; a person approves it first."""
    with EFFECTS.open("a") as log:
        log.write(f"refund {order_id} {amount}\\n")
    return f"refunded {amount} on {order_id}"


def make_agent() -> Agent:
    return Agent(TestModel(), tools=[issue_refund])
'''


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)
    return tmp_path / "home"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A folder holding `shop.py`: a gated refund tool (each refund noted in effects.log) and
    the factory `shop:make_agent`."""
    (tmp_path / "shop.py").write_text(SHOP)
    return tmp_path


def effects(folder: Path) -> list[str]:
    log = folder / "effects.log"
    return log.read_text().splitlines() if log.exists() else []


def cli_process(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line as a process of its own, started in `folder` (so `shop` imports)."""
    return subprocess.run(
        [sys.executable, "-m", "steadyloop", *args],
        cwd=folder, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def pause_from_python(folder: Path) -> Path:
    """Pauses run ticket-4711 as an application would: the agent from `shop`, in this
    process, logged to folder/runs.db."""
    code = textwrap.dedent(
        """
        from shop import issue_refund
        from steadyloop import Agent
        from steadyloop.testing import TestModel

        agent = Agent(TestModel(), tools=[issue_refund], store="runs.db")
        result = agent.run_sync("Refund order A1", run_id="ticket-4711")
        assert result.stop_reason == "approval", result.stop_reason
        """
    )
    subprocess.run([sys.executable, "-c", code], cwd=folder, check=True, timeout=120)
    return folder / "runs.db"


def status(store: Path, run_id: str) -> str:
    log = RunStore(store, read_only=True)
    try:
        return log.run(run_id).status
    finally:
        log.close()


def test_a_run_paused_from_python_is_refused_without_its_tools_and_stays_paused(
    capsys: pytest.CaptureFixture[str], shop: Path
) -> None:
    store = pause_from_python(shop)

    code, out, err = run_cli(capsys, "resume", "ticket-4711", "--store", str(store),
                             "--approve", "call_0")  # fmt: skip

    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "cannot rebuild the tool issue_refund that run ticket-4711 waits on" in err
    assert "--agent MODULE:FUNCTION" in err
    assert "agent.resume('ticket-4711', decisions=...)" in err
    assert effects(shop) == []
    assert status(store, "ticket-4711") == "paused"

    done = cli_process(shop, "resume", "ticket-4711", "--store", "runs.db",
                       "--agent", "shop:make_agent", "--approve", "call_0")  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "refunded 1.0 on example" in done.stdout
    assert effects(shop) == ["refund example 1.0"]
    again = cli_process(shop, "resume", "ticket-4711", "--store", "runs.db",
                        "--agent", "shop:make_agent", "--approve", "call_0")  # fmt: skip
    assert again.returncode == 1
    assert "is not waiting for approval" in again.stderr
    assert effects(shop) == ["refund example 1.0"]


def test_an_agent_without_the_waiting_calls_tool_is_refused_before_anything_is_decided(
    shop: Path,
) -> None:
    store = pause_from_python(shop)
    spec = importlib.util.spec_from_file_location("shop_in_this_test", shop / "shop.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    log = RunStore(store)
    events = len(log.events("ticket-4711"))

    with pytest.raises(ConfigError) as refused:
        asyncio.run(
            Agent(TestModel(), store=log).resume("ticket-4711", decisions={"call_0": Approve()})
        )

    assert "waits for a decision on call_0 (issue_refund)" in str(refused.value)
    assert "has no tool issue_refund" in str(refused.value)
    assert "the run stays paused" in str(refused.value)
    assert len(log.events("ticket-4711")) == events
    assert log.run("ticket-4711").status == "paused"
    assert effects(shop) == []

    agent = module.make_agent()
    agent.store = log
    result = asyncio.run(agent.resume("ticket-4711", decisions={"call_0": Approve()}))

    assert "refunded 1.0 on example" in result.output
    assert effects(shop) == ["refund example 1.0"]
    log.close()


def test_a_paused_result_in_hand_is_not_used_up_by_an_agent_without_its_tool(
    shop: Path,
) -> None:
    calls: list[float] = []

    @tool(approve=True)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refunds an order."""
        calls.append(amount)
        return "refunded"

    paused = Agent(TestModel(), tools=[issue_refund]).run_sync("Refund A1")

    with pytest.raises(ConfigError, match="has no tool issue_refund"):
        asyncio.run(Agent(TestModel()).resume(paused, decisions={"call_0": Approve()}))

    result = asyncio.run(
        Agent(TestModel(), tools=[issue_refund]).resume(paused, decisions={"call_0": Approve()})
    )
    assert "refunded" in result.output
    assert calls == [1.0]


def test_resume_takes_the_twelve_characters_logs_shows_and_lists_an_ambiguous_prefix(
    tmp_path: Path,
) -> None:
    @tool(approve=True)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refunds an order."""
        return "refunded"

    store = RunStore(tmp_path / "runs.db")
    agent = Agent(TestModel(), tools=[issue_refund], store=store)
    paused = agent.run_sync("Refund A1")
    assert paused.run_id is not None

    result = asyncio.run(agent.resume(paused.run_id[:12], decisions={"call_0": Approve()}))

    assert result.run_id == paused.run_id
    assert "refunded" in result.output
    for run_id in ("abcd1" + "0" * 27, "abcd2" + "0" * 27):
        store.start_run(model="m", prompt="p", history=(), config={}, run_id=run_id)
    with pytest.raises(ConfigError) as ambiguous:
        asyncio.run(agent.resume("abcd"))
    assert "ambiguous" in str(ambiguous.value)
    assert "abcd1" + "0" * 27 in str(ambiguous.value)
    assert "abcd2" + "0" * 27 in str(ambiguous.value)
    store.close()


@pytest.mark.parametrize("if_exists", ["return", "resume"])
def test_run_with_the_id_of_a_paused_run_points_to_resume_with_decisions(
    tmp_path: Path, if_exists: IfExists
) -> None:
    @tool(approve=True)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refunds an order."""
        return "refunded"

    agent = Agent(TestModel(), tools=[issue_refund], store=tmp_path / "runs.db")
    agent.run_sync("Refund A1", run_id="ticket-1")

    with pytest.raises(ConfigError) as refused:
        agent.run_sync("Refund A1", run_id="ticket-1", if_exists=if_exists)

    assert "agent.resume('ticket-1', decisions={call_id: Approve()" in str(refused.value)
    assert "if_exists" not in str(refused.value)


GATED = '''
from steadyloop import tool


@tool(approve=True)
def issue_refund(order_id: str, amount: float) -> str:
    """Refunds an order; a person approves it first."""
    with open(__file__ + ".effects", "a") as log:
        log.write(f"refund {order_id} {amount}\\n")
    return f"refunded {amount} on {order_id}"
'''


@pytest.fixture
def paused_cli_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[str, Path]:
    """A run of `steadyloop run` paused on call_0 (issue_refund), and its effects file."""
    tools = tmp_path / "gated.py"
    tools.write_text(GATED)
    code, out, _ = run_cli(capsys, "run", "--tools", str(tools), "--model", "test", "--json", "x")
    assert code == 4
    return json.loads(out)["run_id"], Path(f"{tools}.effects")


def test_resume_without_decisions_or_with_a_wrong_call_names_the_options(
    capsys: pytest.CaptureFixture[str], paused_cli_run: tuple[str, Path]
) -> None:
    run_id, effects_file = paused_cli_run

    code, _, err = run_cli(capsys, "resume", run_id)
    assert code == 1
    assert err.count("\n") == 1
    assert "is waiting for decisions on call_0 (issue_refund)" in err
    assert "--approve CALL, --deny CALL=REASON or --edit CALL=JSON" in err
    assert "decisions=" not in err

    code, _, err = run_cli(capsys, "resume", run_id, "--approve", "call_9")
    assert code == 1
    assert "no call call_9 is waiting" in err
    assert "waiting: call_0 (issue_refund)" in err
    assert "--approve CALL, --deny CALL=REASON" in err
    assert "result.pending" not in err
    assert not effects_file.exists()


def test_two_decisions_for_one_call_are_a_usage_error_and_nothing_is_decided(
    capsys: pytest.CaptureFixture[str], paused_cli_run: tuple[str, Path], home: Path
) -> None:
    run_id, effects_file = paused_cli_run

    code, _, err = run_cli(capsys, "resume", run_id, "--approve", "call_0", "--deny", "call_0=no")

    assert code == 2
    assert "call call_0 is given more than one decision" in err
    assert not effects_file.exists()
    assert status(home / "runs.db", run_id) == "paused"


def test_edit_runs_the_waiting_call_with_other_arguments(
    capsys: pytest.CaptureFixture[str], paused_cli_run: tuple[str, Path]
) -> None:
    run_id, effects_file = paused_cli_run

    code, _, err = run_cli(capsys, "resume", run_id, "--edit", "call_0=[1]")
    assert code == 2
    assert "--edit takes CALL=JSON with the arguments as a JSON object" in err

    code, out, err = run_cli(
        capsys, "resume", run_id, "--edit", 'call_0={"order_id": "A1", "amount": 0.5}'
    )
    assert code == 0, err
    assert "the reviewer changed the arguments" in out
    assert effects_file.read_text().splitlines() == ["refund A1 0.5"]
    code, out, _ = run_cli(capsys, "show", run_id)
    assert 'decision [call_0] issue_refund: edited to {"order_id": "A1", "amount": 0.5}' in out


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ctrl_c_at_the_approval_question_exits_130_at_once(tmp_path: Path, home: Path) -> None:
    import pty

    tools = tmp_path / "gated.py"
    tools.write_text(GATED)
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "run", "--tools", str(tools), "--model", "test",
         "--approve", "refund it"],
        stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "STEADYLOOP_HOME": str(home)},
    ) as proc:  # fmt: skip
        os.close(follower)
        assert proc.stderr is not None
        shown = b""
        while b"y/n/e: " not in shown:
            ready, _, _ = select.select([proc.stderr], [], [], 60)
            assert ready, f"no approval question: {shown!r}"
            chunk = os.read(proc.stderr.fileno(), 4096)
            assert chunk, f"the process ended before asking: {shown!r}"
            shown += chunk
        proc.send_signal(signal.SIGINT)  # what Ctrl-C at the terminal sends
        try:
            _, err = proc.communicate(timeout=60)  # no line is typed: it must not wait for one
        finally:
            proc.kill()
            os.close(leader)
    assert proc.returncode == 130
    assert "interrupted; continue with: steadyloop resume" in err.decode()
    assert not Path(f"{tools}.effects").exists()
