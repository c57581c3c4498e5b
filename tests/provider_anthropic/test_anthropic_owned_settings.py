"""Settings may not replace what the Anthropic adapter and the agent fill in (the model, the
output limit, the messages, the system prompt, the tools, streaming): a `ConfigError` when the
model is made, from `settings=` or the command line's `--set`, and nothing is sent."""

from __future__ import annotations

import pytest

from provider_anthropic.anthropic_fake_server import FakeAnthropic
from steadyloop import ConfigError
from steadyloop.cli import main
from steadyloop.models.anthropic import OWNED_SETTINGS, AnthropicModel


@pytest.mark.parametrize("key", sorted(OWNED_SETTINGS))
def test_a_setting_the_adapter_owns_is_refused_when_the_model_is_made(key: str) -> None:
    with pytest.raises(ConfigError, match=f"^settings may not set {key}: "):
        AnthropicModel("claude-fake", api_key="test-key", settings={key: 1, "temperature": 0})


@pytest.mark.parametrize("setting", ["model=claude-opus-4-1", "stream=false", "system=hi"])
def test_set_of_a_setting_the_adapter_owns_is_an_error_and_sends_nothing(
    setting: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        args = ["run", "--no-log", "--model", "anthropic:claude-fake", "--set", setting, "hi"]
        assert main(args) == 1
    name = setting.partition("=")[0]
    assert capsys.readouterr().err.startswith(f"error: settings may not set {name}: ")
    assert fake.requests == []
