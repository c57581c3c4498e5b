"""The command line: spans to an OTLP collector, what to install when it cannot send them, and
the cost in `logs`, `show`, the live view and `--json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import genai_prices
import pytest

from steadyloop import Agent, AssistantMessage, Usage
from steadyloop.cli import main
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel
from tracing.local_servers import REPLY_USAGE, chat_completions, otlp_receiver

TOOLS = '''
from steadyloop import tool


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b
'''


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    for name in ("STEADYLOOP_MODEL", "OTEL_EXPORTER_OTLP_ENDPOINT", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def test_the_cli_sends_its_spans_to_the_otlp_endpoint(tmp_path: Path, home: Path) -> None:
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS)
    with otlp_receiver() as (endpoint, spans):
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        env.pop("OTEL_SERVICE_NAME", None)
        process = subprocess.Popen(
            [sys.executable, "-m", "steadyloop", "run", "--model", "test", "--tools", str(tools),
             "add two numbers"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            out, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 0, err
        assert "add [ok]" in out

    names = sorted(span.name for span in spans)
    assert names == ["chat test", "chat test", "execute_tool add", "invoke_agent"]
    run = next(span for span in spans if span.name == "invoke_agent")
    assert run.service_name == "steadyloop"
    assert run.attributes["steadyloop.run_id"] == RunStore(home / "runs.db").runs()[0].id
    for span in spans:
        if span is not run:
            assert span.parent_span_id == run.span_id
    tool = next(span for span in spans if span.name == "execute_tool add")
    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert "gen_ai.tool.call.arguments" not in tool.attributes  # content is opt-in


NOT_INSTALLED = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.sdk",
    "opentelemetry.sdk.resources",
    "opentelemetry.sdk.trace",
    "opentelemetry.sdk.trace.export",
)


def test_without_the_sdk_the_cli_says_what_to_install_and_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    for missing in NOT_INSTALLED:
        monkeypatch.setitem(sys.modules, missing, None)
    assert main(["run", "--model", "test", "hello"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "(test model) You said: hello"
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in err
    assert "pip install" in err
    assert "opentelemetry-sdk opentelemetry-exporter-otlp-proto-http" in err


def expected_cost() -> float:
    usage = genai_prices.Usage(
        input_tokens=REPLY_USAGE["prompt_tokens"], output_tokens=REPLY_USAGE["completion_tokens"]
    )
    return float(genai_prices.calc_price(usage, "gpt-4.1-mini", provider_id="openai").total_price)


def test_json_output_has_the_run_s_cost(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with chat_completions() as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        assert main(["run", "--model", "openai:gpt-4.1-mini", "--json", "hi"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["output"] == "hello"
    assert data["cost_usd"] == pytest.approx(expected_cost())
    assert data["usage"]["cost_usd"] == data["cost_usd"]
    assert "cost $" in err  # the live view's last line

    assert main(["run", "--model", "test", "--json", "hi"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cost_usd"] is None
    assert data["usage"]["cost_usd"] is None


def test_logs_and_show_print_what_each_run_cost(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    home.mkdir()
    priced = ScriptedModel(
        [AssistantMessage("hi", usage=Usage(1_000_000, 0))], name="openai:gpt-4.1-mini"
    )
    store = RunStore(home / "runs.db")
    Agent(priced, store=store).run_sync("priced")
    Agent(ScriptedModel(["hi"]), store=store).run_sync("free of prices")
    priced_run, fake_run = sorted(store.runs(), key=lambda r: r.model)
    store.close()
    cost = priced_run.usage.cost_usd
    assert cost is not None
    assert cost > 0.01  # a million input tokens
    shown = f"${cost:.4f}"

    assert main(["logs"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert "COST" in header
    by_model = {row.split()[3]: row.split() for row in rows}
    assert by_model["openai:gpt-4.1-mini"][-2] == shown
    assert by_model["scripted"][-2] == "-"
    # the fake reported no tokens: unknown, not zero
    assert by_model["openai:gpt-4.1-mini"][-3] == "1,000,000"
    assert by_model["scripted"][-3] == "-"

    assert main(["show", priced_run.id]) == 0
    assert f"tokens 1,000,000 · cost {shown}" in capsys.readouterr().out
    assert main(["show", fake_run.id]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "tokens - · cost -"
