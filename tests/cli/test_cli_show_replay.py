"""`steadyloop show` and `steadyloop replay` on runs where features meet: typed answers, images,
and runs paused for approval, then resumed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from steadyloop import Agent, Approve, AssistantMessage, Deny, Edit, RunContext, ToolCall, tool
from steadyloop.approvals import Decision
from steadyloop.messages import Native
from steadyloop.replay import replay_run
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel, TestModel
from steadyloop.toolfile import load_from_file, load_tools_from_file
from support.cli import run_cli
from support.samples import PNG

MODELS = """
from pydantic import BaseModel


class Refund(BaseModel):
    order_id: str
    amount: float
"""

PAYMENTS = '''
from steadyloop import tool


@tool
def send_email(to: str) -> str:
    """Sends an email."""
    return f"sent to {to}"


@tool(approve=True)
def wire_money(amount: int) -> str:
    """Wires money; a person approves each transfer."""
    return f"wired {amount} EUR"
'''


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)
    return tmp_path / "home"


def last_run(capsys: pytest.CaptureFixture[str]) -> str:
    return run_cli(capsys, "logs")[1].splitlines()[1].split()[0]


@pytest.mark.parametrize("options", [[], ["--recorded-tools"]])
def test_replay_of_a_typed_run_matches(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, options: list[str]
) -> None:
    models = tmp_path / "models.py"
    models.write_text(MODELS)
    code, out, _ = run_cli(
        capsys, "run", "--json", "--model", "test", "--output", f"{models}:Refund", "Refund A1"
    )
    assert code == 0
    run_id = json.loads(out)["run_id"]
    code, out, _ = run_cli(capsys, "replay", run_id, *options)
    assert (code, out.strip()) == (0, f"replay of {run_id[:12]} matches the log (3 entries)")


def test_replay_takes_the_answer_type_from_the_log_or_from_the_caller(
    tmp_path: Path, home: Path
) -> None:
    models = tmp_path / "models.py"
    models.write_text(MODELS)
    refund = load_from_file(f"{models}:Refund")
    store = RunStore(tmp_path / "runs.db")
    Agent(TestModel(), output=refund, store=store).run_sync("Refund A1", run_id="t1")
    typed = asyncio.run(replay_run(store, "t1", recorded_tools=True, output=refund))
    untyped = asyncio.run(replay_run(store, "t1", recorded_tools=True))
    store.close()
    assert typed.divergence is None
    assert typed.result is not None
    assert isinstance(typed.result.output, refund)
    assert untyped.divergence is not None
    assert "pass its answer type (output=, or --output FILE.py:NAME)" in untyped.divergence


def test_replay_passes_deps_to_the_tools(tmp_path: Path) -> None:
    @tool
    def shop_name(ctx: RunContext[str]) -> str:
        """The shop's name."""
        return ctx.deps

    store = RunStore(tmp_path / "runs.db")
    Agent(TestModel(), tools=[shop_name], store=store).run_sync("Hi", run_id="d1", deps="Ana's")
    same = asyncio.run(replay_run(store, "d1", [shop_name], deps="Ana's"))
    other = asyncio.run(replay_run(store, "d1", [shop_name], deps="Bo's"))
    store.close()
    assert same.divergence is None
    assert other.divergence is not None
    assert "entry 2 differs" in other.divergence


def test_a_run_with_an_image_replays_and_shows_what_was_sent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    receipt = tmp_path / "receipt.png"
    receipt.write_bytes(PNG)
    code, _, _ = run_cli(capsys, "run", "--model", "test", "--image", str(receipt), "Is this paid?")
    assert code == 0
    run_id = last_run(capsys)
    code, out, _ = run_cli(capsys, "replay", run_id)
    assert (code, "matches the log (2 entries)" in out) == (0, True)
    lines = run_cli(capsys, "show", run_id)[1].splitlines()
    user = lines.index("user: Is this paid?")
    assert lines[user + 1] == f"  [image: image/png, {len(PNG)} bytes]"


def paused_and_decided(store: RunStore, tools_file: Path, decision: Decision) -> str:
    """A run whose reply sends an email and wires money (gated): it pauses, then resumes with
    `decision` on the transfer and answers."""
    tools = load_tools_from_file(str(tools_file))
    both = AssistantMessage(
        tool_calls=(
            ToolCall("c_mail", "send_email", json.dumps({"to": "ana@example.com"})),
            ToolCall("c_wire", "wire_money", json.dumps({"amount": 1})),
        )
    )
    paused = Agent(ScriptedModel([both]), tools=tools, store=store).run_sync("Pay Ana", run_id="p")
    assert paused.stop_reason == "approval"
    agent = Agent(ScriptedModel(["Done."]), tools=tools, store=store)
    asyncio.run(agent.resume("p", decisions={"c_wire": decision}))
    return "p"


@pytest.mark.parametrize("decision", [Approve(), Deny("too much"), Edit({"amount": 2})])
def test_replay_of_a_paused_then_decided_run_applies_the_logged_decisions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path, decision: Decision
) -> None:
    payments = tmp_path / "payments.py"
    payments.write_text(PAYMENTS)
    home.mkdir()
    store = RunStore(home / "runs.db")
    run_id = paused_and_decided(store, payments, decision)
    store.close()
    code, out, _ = run_cli(capsys, "replay", run_id, "--tools", str(payments))
    assert code == 0, out
    assert "matches the log" in out


def test_show_prints_a_decision_before_the_result_it_let_run_and_each_result_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
) -> None:
    payments = tmp_path / "payments.py"
    payments.write_text(PAYMENTS)
    home.mkdir()
    store = RunStore(home / "runs.db")
    run_id = paused_and_decided(store, payments, Approve())
    store.close()
    lines = run_cli(capsys, "show", run_id)[1].splitlines()
    sent = [n for n, line in enumerate(lines) if line.endswith(": sent to ana@example.com")]
    wired = [n for n, line in enumerate(lines) if line.endswith(": wired 1 EUR")]
    waiting = lines.index("decision [c_wire] wire_money: waiting for approval")
    approved = lines.index("decision [c_wire] wire_money: approved")
    assert len(sent) == 1
    assert len(wired) == 1
    assert waiting < approved < wired[0] < lines.index("assistant: Done.")


def test_show_json_prints_unknown_token_counts_as_null_after_a_resume(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, home: Path
) -> None:
    """TestModel reports no token counts: unknown before the pause, and after it."""
    payments = tmp_path / "payments.py"
    payments.write_text(PAYMENTS)
    home.mkdir()
    store = RunStore(home / "runs.db")
    tools = load_tools_from_file(str(payments))
    paused = Agent(TestModel(), tools=tools, store=store).run_sync("Pay Ana", run_id="u")
    asyncio.run(
        Agent(TestModel(), tools=tools, store=store).resume(
            "u", decisions={call: Approve() for call in paused.pending}
        )
    )
    store.close()
    usage = json.loads(run_cli(capsys, "show", "u", "--json")[1])["run"]["usage"]
    assert usage["requests"] == usage["unreported"] == 2
    assert usage["total_tokens"] is None
    assert usage["input_tokens"] is None
    assert usage["output_tokens"] is None
    assert usage["cache_read_tokens"] is None
    out = run_cli(capsys, "run", "--json", "--model", "test", "hi")[1]
    assert json.loads(out)["usage"].keys() == usage.keys()  # the same fields as `run --json`


def test_show_prints_a_replys_reasoning_before_its_text_and_never_its_ciphertext(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    """A reasoning model's reply: `show` has its readable reasoning on a line of its own before
    the text, no encrypted content; `show --json` has it in the message."""
    native = Native(
        "openai-responses",
        "https://api.openai.com/v1",
        "gpt-5",
        [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAsecret"}],
    )
    reply = AssistantMessage("Paris.", reasoning_text="The capital of France.", native=native)
    home.mkdir()
    store = RunStore(home / "runs.db")
    Agent(ScriptedModel([reply]), store=store).run_sync("Capital?", run_id="r")
    store.close()
    lines = run_cli(capsys, "show", "r")[1].splitlines()
    thinking = lines.index("assistant (thinking): The capital of France.")
    assert thinking + 1 == lines.index("assistant: Paris.")
    assert not any("gAAAAsecret" in line for line in lines)
    events = json.loads(run_cli(capsys, "show", "r", "--json")[1])["events"]
    shown = [e["data"]["message"] for e in events if e["kind"] == "message"]
    thoughts = [m.get("reasoning_text") for m in shown if m["type"] == "assistant"]
    assert thoughts == ["The capital of France."]


def test_show_prints_a_calls_arguments_with_their_own_characters(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    """Arguments a provider delivered as an object (as Anthropic and Gemini do) are shown as
    the JSON the model wrote, not with `\\u` escapes; text that is not a JSON object as it came."""

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    calls = (ToolCall("c1", "weather", {"city": "São Paulo"}), ToolCall("c2", "weather", "{"))
    home.mkdir()
    store = RunStore(home / "runs.db")
    model = ScriptedModel([AssistantMessage(tool_calls=calls), "Sunny."])
    Agent(model, tools=[weather], store=store).run_sync("Weather?", run_id="w")
    store.close()
    lines = run_cli(capsys, "show", "w")[1].splitlines()
    assert 'assistant → weather({"city": "São Paulo"})  [c1]' in lines
    assert "assistant → weather({)  [c2]" in lines
