"""`timeout` bounds a whole model call, through the official SDK against the fake server.

An HTTP client's timeout bounds each read, so a server that keeps a connection busy (SSE
keep-alive comments, a JSON body that starts with whitespace) could hold a call far longer.
The bounds below are generous: they prove the deadline holds, not how fast it fires.
"""

from __future__ import annotations

import time

import pytest
from openai_fake_server import Drip, FakeOpenAI, Stall

from steadyloop import Agent
from steadyloop.errors import ModelError
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.models.openai_responses import OpenAIResponsesModel
from steadyloop.retry import Backoff


def agent_for(server: FakeOpenAI, api: str, model_retries: int = 2) -> Agent:
    cls = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls("gpt-test", base_url=server.base_url, api_key=server.api_key, timeout=0.5)
    return Agent(model, backoff=Backoff.none(), model_retries=model_retries)


async def ask(agent: Agent, streaming: bool) -> None:
    """One run, as a whole or streamed."""
    if streaming:
        async for _ in agent.stream("hi"):
            pass
    else:
        await agent.run("hi")


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streamed"])
async def test_a_reply_that_drips_for_10_s_is_cut_at_a_half_second_timeout(
    server: FakeOpenAI, api: str, streaming: bool
) -> None:
    server.queue(Drip(10.0))
    started = time.monotonic()
    async with agent_for(server, api, model_retries=0) as agent:
        with pytest.raises(ModelError, match=r"timed out.*0\.5 s") as info:
            await ask(agent, streaming)
    assert time.monotonic() - started < 3
    assert info.value.retryable


async def test_a_silent_server_costs_one_timeout_per_attempt(server: FakeOpenAI, api: str) -> None:
    server.queue(Stall(10.0), Stall(10.0), Stall(10.0))
    started = time.monotonic()
    async with agent_for(server, api) as agent:
        with pytest.raises(ModelError, match="timed out"):
            await agent.run("hi")
    assert len(server.requests) == 3
    assert time.monotonic() - started < 6
