"""Building the OpenAI adapters: spec strings, keys, base URLs, the SDK missing."""

from __future__ import annotations

import sys

import pytest

from provider_openai.openai_fake_server import FakeOpenAI, Reply
from steadyloop import Agent, ConfigError
from steadyloop.models import resolve_model
from steadyloop.models.ollama import ollama_base_url
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.models.openai_responses import OpenAIResponsesModel
from steadyloop.retry import Backoff


@pytest.mark.parametrize("spec", ["openai:gpt-4.1-mini", "openai-responses:gpt-4.1-mini"])
def test_missing_key_fails_when_the_agent_is_built(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError) as info:
        Agent(spec)
    message = str(info.value)
    assert "OPENAI_API_KEY" in message
    assert "api_key=" in message
    assert "--model test" in message


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai -> ModuleNotFoundError
    with pytest.raises(ConfigError, match=r"pip install 'steadyloop\[openai\]'"):
        OpenAIChatModel("gpt-4.1-mini", api_key="sk-x")


async def test_spec_strings_use_the_environment(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.queue(Reply(text="from chat"), Reply(text="from responses"))
    for spec, cls in (
        ("openai:gpt-x", OpenAIChatModel),
        ("openai-responses:gpt-x", OpenAIResponsesModel),
    ):
        model = resolve_model(spec)
        assert type(model) is cls
        assert model.name == spec
        async with Agent(model, backoff=Backoff.none()) as agent:
            result = await agent.run("hi")
        assert result.output == ("from chat" if cls is OpenAIChatModel else "from responses")
    assert [r["model"] for r in server.requests] == ["gpt-x", "gpt-x"]


async def test_ollama_spec_needs_no_key_and_accepts_a_host_without_v1(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    host = server.base_url.removesuffix("/v1").removeprefix("http://")
    monkeypatch.setenv("OLLAMA_HOST", host)
    server.api_key = "no-key"  # what the adapter sends when there is none
    server.queue(Reply(text="local"))
    model = resolve_model("ollama:llama3.2")
    assert model.name == "ollama:llama3.2"
    async with Agent(model, backoff=Backoff.none()) as agent:
        assert (await agent.run("hi")).output == "local"
    assert server.requests[0]["model"] == "llama3.2"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://localhost:11434/v1"),
        ("", "http://localhost:11434/v1"),
        ("127.0.0.1", "http://127.0.0.1:11434/v1"),
        ("127.0.0.1:8080", "http://127.0.0.1:8080/v1"),
        ("http://gpu-box:11434", "http://gpu-box:11434/v1"),
        ("https://llm.example.com/v1/", "https://llm.example.com/v1"),
    ],
)
def test_ollama_host_forms(host: str | None, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert ollama_base_url(host) == url


def test_empty_model_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="model name"):
        OpenAIChatModel("", api_key="sk-x")
