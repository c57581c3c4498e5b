"""A 200 that is not the API's reply is a `ModelError`, never a crash or an empty answer."""

from __future__ import annotations

import pytest
from openai_fake_server import Fail, FakeOpenAI, Html, NoChoices

from steadyloop import Agent
from steadyloop.errors import ModelError
from steadyloop.models.openai_chat import OpenAIChatModel, OpenAIModel
from steadyloop.models.openai_responses import OpenAIResponsesModel
from steadyloop.retry import Backoff


def agent_for(server: FakeOpenAI, api: str) -> Agent:
    cls: type[OpenAIModel] = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls("gpt-test", base_url=server.base_url, api_key=server.api_key)
    return Agent(model, backoff=Backoff.none(), model_retries=0)


async def ask(agent: Agent, streaming: bool) -> str:
    """One run, as a whole or streamed; its answer."""
    if not streaming:
        return (await agent.run("hi")).output
    async for event in agent.stream("hi"):
        result = getattr(event, "result", None)
        if result is not None:
            return str(result.output)
    raise AssertionError("the stream ended without a result")


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streamed"])
async def test_an_html_page_with_status_200_is_a_model_error(
    server: FakeOpenAI, api: str, streaming: bool
) -> None:
    server.queue(Html("<html><body>Sign in to the proxy</body></html>"))
    async with agent_for(server, api) as agent:
        with pytest.raises(ModelError) as info:
            await ask(agent, streaming)
    if not streaming:
        assert "Sign in to the proxy" in str(info.value)


async def test_json_that_is_not_a_reply_is_a_model_error(server: FakeOpenAI, api: str) -> None:
    server.queue(Fail(200, {"status": "ok", "service": "gateway"}))
    async with agent_for(server, api) as agent:
        with pytest.raises(ModelError, match="gateway"):
            await agent.run("hi")


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
