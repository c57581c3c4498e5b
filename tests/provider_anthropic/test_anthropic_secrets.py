"""Keys and URL passwords never leave the Anthropic adapter: not in the caller's error (nor the
traceback printed for it), the command line's output, the run log's bytes, `steadyloop export`,
the viewer's API or spans with content. The places are gathered by `support.secret_places`,
so every provider is held to the same list."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from provider_anthropic.anthropic_fake_server import FakeAnthropic, error, message, text
from steadyloop import Agent, ConfigError, ModelError
from steadyloop.cli import main
from steadyloop.models.anthropic import AnthropicModel
from steadyloop.retry import Backoff
from support.secret_places import (
    cli_run,
    closed_port,
    failure_places,
    holding,
    logged_places,
    span_places,
)

SPEC = "anthropic:claude-fake"
KEY = "sk-ant-api03-Q3cR7tK9wZ2mV5xL8nB4"
PASSWORD = "pr0xyT0ken-7Hs2Kq"
# What a CRLF .env file, open(path).read() or a careless paste leaves around a key.
KEY_SHAPES = {"CR": KEY + "\r", "LF": KEY + "\n", "CRLF": KEY + "\r\n", "spaces": f"  {KEY}  "}


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    for name in (
        "STEADYLOOP_MODEL", "OTEL_EXPORTER_OTLP_ENDPOINT", "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
    ):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


def test_a_key_with_a_line_ending_or_spaces_is_sent_clean_and_shown_nowhere(
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs.db"
    output = []
    replies = [message(text(f"answered with the key in {shape}")) for shape in KEY_SHAPES]
    with FakeAnthropic(replies) as fake:
        for shape, key in KEY_SHAPES.items():
            done = cli_run(SPEC, {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": fake.url}, log)
            assert done.returncode == 0, done.stderr
            assert f"answered with the key in {shape}" in done.stdout
            output.append(done.stdout + done.stderr)
    assert fake.credentials == [KEY] * len(KEY_SHAPES)
    places = {"command line output": "".join(output), **logged_places(log)}
    assert holding(places, KEY) == []


@pytest.mark.parametrize("shape", KEY_SHAPES)
async def test_a_key_with_a_line_ending_reaches_no_span(
    shape: str,
    monkeypatch: pytest.MonkeyPatch,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
) -> None:
    with FakeAnthropic([message(text("the answer"))]) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY_SHAPES[shape])
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        agent = Agent(SPEC, tracer_provider=provider, trace_content=True, backoff=Backoff.none())
        async with agent:
            result = await agent.run("hello")
    assert result.output == "the answer"
    assert fake.credentials == [KEY]
    assert holding(span_places(exporter.get_finished_spans()), KEY) == []


async def test_a_key_in_a_ready_client_is_in_no_error_nor_its_traceback(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    log = tmp_path / "runs.db"
    with FakeAnthropic() as fake:
        # The adapter sends a ready client's key as it is; HTTP refuses the header and quotes it.
        client = anthropic.AsyncAnthropic(api_key=KEY + "\r", base_url=fake.url, max_retries=0)
        agent = Agent(
            AnthropicModel("claude-fake", client=client),
            store=log,
            tracer_provider=provider,
            trace_content=True,
            model_retries=1,
            backoff=Backoff.none(),
        )
        async with agent:
            with pytest.raises(ModelError) as failure:
                await agent.run("hello")
        await client.close()
    assert "could not reach" in str(failure.value)
    places = {
        **failure_places(failure.value),
        **span_places(exporter.get_finished_spans()),
        **logged_places(log),
    }
    assert holding(places, KEY) == []


async def test_a_key_a_proxy_echoes_in_its_error_is_masked() -> None:
    echoed = f"upstream refused: headers were x-api-key: {KEY}"
    with FakeAnthropic([error(400, "invalid_request_error", echoed)]) as fake:
        model = AnthropicModel("claude-fake", base_url=fake.url, api_key=KEY)
        async with Agent(model, model_retries=0) as agent:
            with pytest.raises(ModelError) as failure:
                await agent.run("hello")
    assert "upstream refused: headers were x-api-key: ***" in str(failure.value)
    assert holding(failure_places(failure.value), KEY) == []


def test_a_password_in_the_base_url_is_masked_when_the_server_is_down(tmp_path: Path) -> None:
    log = tmp_path / "runs.db"
    base_url = f"http://proxyuser:{PASSWORD}@127.0.0.1:{closed_port()}"
    done = cli_run(SPEC, {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": base_url}, log)
    assert done.returncode == 1
    assert "could not reach http://proxyuser:***@127.0.0.1" in done.stderr
    places = {"command line output": done.stdout + done.stderr, **logged_places(log)}
    assert holding(places, PASSWORD) == []


async def test_a_password_in_the_base_url_reaches_neither_the_caller_nor_a_span(
    monkeypatch: pytest.MonkeyPatch, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    base_url = f"http://proxyuser:{PASSWORD}@127.0.0.1:{closed_port()}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
    agent = Agent(SPEC, tracer_provider=provider, trace_content=True, model_retries=0)
    async with agent:
        with pytest.raises(ModelError) as failure:
            await agent.run("hello")
    assert "proxyuser:***@127.0.0.1" in str(failure.value)
    places = {**failure_places(failure.value), **span_places(exporter.get_finished_spans())}
    assert holding(places, PASSWORD) == []


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_a_key_with_a_character_no_header_can_carry_is_a_one_line_config_error(
    variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv(variable, "sk-ant-prój-key")
    assert main(["run", "--no-log", "--model", SPEC, "hello"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {variable} holds a character an HTTP header cannot carry")
    assert err.count("\n") == 1
    assert "prój" not in err
    with pytest.raises(ConfigError, match=r"^api_key holds a character"):
        AnthropicModel("claude-fake", api_key="sk-ant-prój-key")
