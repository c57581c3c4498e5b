"""Keys and URL passwords never leave the OpenAI adapters: not in the caller's error, the command
line's output, the run log's bytes, `steadyloop export`, the viewer's API or spans with content.

A key read with the line ending of a CRLF `.env` file (or `open(path).read()`) is used without
it; a key the adapter is handed inside a ready client, which it cannot clean, is masked in every
error that quotes it; a password in the base URL is shown as `***`."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from provider_openai.openai_fake_server import Fail, FakeOpenAI, Reply, error_body
from steadyloop import Agent, ConfigError, ModelError
from steadyloop.cli import main
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.models.openai_responses import OpenAIResponsesModel
from steadyloop.retry import Backoff
from support.secret_places import (
    cli_run,
    closed_port,
    failure_places,
    holding,
    logged_places,
    span_places,
)

KEY = "sk-proj-Q3cR7tK9wZ2mV5xL8nB4"
PASSWORD = "pr0xyT0ken-7Hs2Kq"
SPECS = ["openai:gpt-test", "openai-responses:gpt-test"]
# What a CRLF .env file, open(path).read() or a careless paste leaves around a key.
KEY_SHAPES = {"CR": KEY + "\r", "LF": KEY + "\n", "CRLF": KEY + "\r\n", "spaces": f"  {KEY}  "}


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    for name in ("STEADYLOOP_MODEL", "OTEL_EXPORTER_OTLP_ENDPOINT", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("spec", SPECS)
def test_a_key_with_a_line_ending_or_spaces_is_sent_clean_and_shown_nowhere(
    spec: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs.db"
    output = []
    with FakeOpenAI(api_key=KEY) as server:  # answers 401 to any other Authorization
        for shape, key in KEY_SHAPES.items():
            server.queue(Reply(text=f"answered with the key in {shape}"))
            done = cli_run(spec, {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": server.base_url}, log)
            assert done.returncode == 0, done.stderr
            assert f"answered with the key in {shape}" in done.stdout
            output.append(done.stdout + done.stderr)
    places = {"command line output": "".join(output), **logged_places(log)}
    assert holding(places, KEY) == []


@pytest.mark.parametrize("shape", KEY_SHAPES)
@pytest.mark.parametrize("spec", SPECS)
async def test_a_key_with_a_line_ending_reaches_no_span(
    spec: str,
    shape: str,
    monkeypatch: pytest.MonkeyPatch,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
) -> None:
    with FakeOpenAI(api_key=KEY) as server:
        server.queue(Reply(text="the answer"))
        monkeypatch.setenv("OPENAI_API_KEY", KEY_SHAPES[shape])
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        agent = Agent(spec, tracer_provider=provider, trace_content=True, backoff=Backoff.none())
        async with agent:
            result = await agent.run("hello")
    assert result.output == "the answer"
    assert holding(span_places(exporter.get_finished_spans()), KEY) == []


@pytest.mark.parametrize("cls", [OpenAIChatModel, OpenAIResponsesModel])
async def test_a_key_in_a_ready_client_is_masked_in_every_error_that_quotes_it(
    cls: type[OpenAIChatModel],
    tmp_path: Path,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
) -> None:
    log = tmp_path / "runs.db"
    with FakeOpenAI(api_key=KEY) as server:
        # The adapter sends a ready client's key as it is; HTTP refuses the header and quotes it.
        client = openai.AsyncOpenAI(api_key=KEY + "\r", base_url=server.base_url, max_retries=0)
        agent = Agent(
            cls("gpt-test", client=client),
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
    assert "Illegal header value" in str(failure.value)  # what went wrong is still said
    assert "Bearer ***" in str(failure.value)
    places = {
        **failure_places(failure.value),
        **span_places(exporter.get_finished_spans()),
        **logged_places(log),
    }
    assert "Bearer ***" in places["steadyloop export"]  # the retry and the failure are logged
    assert holding(places, KEY) == []


@pytest.mark.parametrize("cls", [OpenAIChatModel, OpenAIResponsesModel])
async def test_a_key_a_proxy_echoes_in_its_error_is_masked(cls: type[OpenAIChatModel]) -> None:
    echoed = f"upstream refused: headers were Authorization: Bearer {KEY}, api-key: {KEY}"
    with FakeOpenAI(api_key=KEY) as server:
        server.queue(Fail(400, error_body(echoed)))
        model = cls("gpt-test", base_url=server.base_url, api_key=KEY)
        async with Agent(model, model_retries=0) as agent:
            with pytest.raises(ModelError) as failure:
                await agent.run("hello")
    assert "upstream refused: headers were Authorization: Bearer ***, api-key: ***" in str(
        failure.value
    )
    assert holding(failure_places(failure.value), KEY) == []


@pytest.mark.parametrize("spec", SPECS)
def test_a_password_in_the_base_url_is_masked_when_the_server_is_down(
    spec: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs.db"
    base_url = f"http://proxyuser:{PASSWORD}@127.0.0.1:{closed_port()}/v1"
    done = cli_run(spec, {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": base_url}, log)
    assert done.returncode == 1
    assert "Connection error. at http://proxyuser:***@127.0.0.1" in done.stderr
    places = {"command line output": done.stdout + done.stderr, **logged_places(log)}
    assert holding(places, PASSWORD) == []


@pytest.mark.parametrize("spec", SPECS)
async def test_a_password_in_the_base_url_reaches_neither_the_caller_nor_a_span(
    spec: str,
    monkeypatch: pytest.MonkeyPatch,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    base_url = f"http://proxyuser:{PASSWORD}@127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    agent = Agent(spec, tracer_provider=provider, trace_content=True, model_retries=0)
    async with agent:
        with pytest.raises(ModelError) as failure:
            await agent.run("hello")
    assert "proxyuser:***@127.0.0.1" in str(failure.value)
    places = {**failure_places(failure.value), **span_places(exporter.get_finished_spans())}
    assert holding(places, PASSWORD) == []


@pytest.mark.parametrize("spec", SPECS)
def test_a_key_with_a_character_no_header_can_carry_is_a_one_line_config_error(
    spec: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-prój-key")
    assert main(["run", "--no-log", "--model", spec, "hello"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: OPENAI_API_KEY holds a character an HTTP header cannot carry")
    assert err.count("\n") == 1
    assert "prój" not in err
    with pytest.raises(ConfigError, match=r"^api_key holds a character"):
        OpenAIChatModel("gpt-test", api_key="sk-prój-key")
