"""`adapter`: each provider adapter with its fake server running, one test run per adapter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from provider_anthropic.anthropic_fake_server import FakeAnthropic
from provider_google.gemini_fake_server import FakeGemini
from provider_openai.openai_fake_server import FakeOpenAI
from providers.adapters import Adapter, AnthropicAdapter, GoogleAdapter, OpenAIAdapter


@pytest.fixture(params=["openai-chat", "openai-responses", "anthropic", "google"])
def adapter(request: pytest.FixtureRequest) -> Iterator[Adapter]:
    """The adapter under test, its fake server started for the test and stopped after it."""
    if request.param == "anthropic":
        with FakeAnthropic() as claude:
            yield AnthropicAdapter(claude)
    elif request.param == "google":
        with FakeGemini() as fake:
            yield GoogleAdapter(fake)
    else:
        with FakeOpenAI() as openai:
            yield OpenAIAdapter(openai, request.param.removeprefix("openai-"))
