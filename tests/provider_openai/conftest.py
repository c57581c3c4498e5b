"""Fixtures for the OpenAI adapter tests: a fake OpenAI server and models pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from provider_openai.openai_fake_server import FakeOpenAI
from steadyloop.models.openai_base import OpenAIModel


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    """Runs a test once against Chat Completions and once against Responses."""
    value: str = request.param
    return value


MakeModel = Callable[..., OpenAIModel]


@pytest.fixture
async def make_model(server: FakeOpenAI, api: str) -> AsyncIterator[MakeModel]:
    """`make_model(**options)`: the adapter under test, talking to `server` with its key."""
    from steadyloop.models.openai_chat import OpenAIChatModel
    from steadyloop.models.openai_responses import OpenAIResponsesModel

    made: list[OpenAIModel] = []

    def make(**options: Any) -> OpenAIModel:
        options.setdefault("base_url", server.base_url)
        options.setdefault("api_key", server.api_key)
        cls = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
        made.append(cls("gpt-test", **options))
        return made[-1]

    yield make
    for model in made:
        await model.aclose()
