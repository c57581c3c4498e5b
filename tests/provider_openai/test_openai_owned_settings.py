"""Settings may not replace what the adapter and the agent fill in: the model (which the cost is
priced as), the messages or input, streaming, the tools. Each is a `ConfigError` when the model
is made, whether from `settings=` or the command line's `--set`, and nothing is sent."""

from __future__ import annotations

import pytest

from provider_openai.openai_fake_server import FakeOpenAI
from steadyloop import ConfigError
from steadyloop.cli import main
from steadyloop.models import resolve_model
from steadyloop.models.openai_chat import CHAT_OWNED
from steadyloop.models.openai_responses import RESPONSES_OWNED

OWNED = {"openai": CHAT_OWNED, "openai-responses": RESPONSES_OWNED, "ollama": CHAT_OWNED}
CASES = [(provider, key) for provider, keys in OWNED.items() for key in sorted(keys)]


@pytest.mark.parametrize(("provider", "key"), CASES)
def test_a_setting_the_adapter_owns_is_refused_when_the_model_is_made(
    provider: str, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(ConfigError, match=f"^settings may not set {key}: "):
        resolve_model(f"{provider}:gpt-4.1-mini", settings={key: "gpt-4o", "temperature": 0})


@pytest.mark.parametrize(
    ("provider", "setting", "named"),
    [
        ("openai", "model=gpt-4o", "model"),
        ("openai", "stream=false", "stream"),
        ("openai", "messages=[]", "messages"),
        ("openai-responses", "model=gpt-4o", "model"),
        ("openai-responses", "input=[]", "input"),
        ("openai-responses", "stream=false", "stream"),
        ("ollama", "model=llama3.3", "model"),
    ],
)
def test_set_of_a_setting_the_adapter_owns_is_an_error_and_sends_nothing(
    provider: str,
    setting: str,
    named: str,
    server: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OLLAMA_HOST", server.base_url)
    args = ["run", "--no-log", "--model", f"{provider}:gpt-4.1-mini", "--set", setting, "hi"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: settings may not set {named}: the model and the agent set them")
    assert server.requests == []
