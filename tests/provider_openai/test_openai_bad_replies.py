"""A 200 that is not the API's reply is a `ModelError`, never a crash or an empty answer."""

from __future__ import annotations

import pytest

from provider_openai.openai_fake_server import FakeOpenAI, NoChoices
from providers.adapters import ask
from steadyloop import Agent
from steadyloop.errors import ModelError
from steadyloop.models.openai_base import OpenAIModel
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.models.openai_responses import OpenAIResponsesModel
from steadyloop.retry import Backoff


def agent_for(server: FakeOpenAI, api: str) -> Agent:
    cls: type[OpenAIModel] = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls("gpt-test", base_url=server.base_url, api_key=server.api_key)
    return Agent(model, backoff=Backoff.none(), model_retries=0)


async def test_no_choices_is_the_same_error_plain_or_streamed(server: FakeOpenAI) -> None:
    errors: list[ModelError] = []
    for streaming in (False, True):
        server.queue(NoChoices())
        async with agent_for(server, "chat") as agent:
            with pytest.raises(ModelError, match="no choices") as info:
                await ask(agent, streaming)
        errors.append(info.value)
    plain, streamed = errors
    assert (plain.retryable, plain.provider) == (streamed.retryable, streamed.provider)
