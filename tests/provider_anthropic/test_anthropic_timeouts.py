"""`timeout` bounds a whole call to Claude, through the official SDK against the fake server.

The SDK's timeout bounds each read, and the API keeps a stream busy with `ping` events, so
only an overall deadline stops a reply that never finishes. The bounds below are generous:
they prove the deadline holds, not how fast it fires.
"""

from __future__ import annotations

import time

import pytest
from anthropic_fake_server import FakeAnthropic, Reply, message, model_for, text

from steadyloop import Agent
from steadyloop.errors import ModelError
from steadyloop.retry import Backoff

LATE = message(text("too late")).message


async def ask(agent: Agent, streaming: bool) -> None:
    """One run, as a whole or streamed."""
    if streaming:
        async for _ in agent.stream("hi"):
            pass
    else:
        await agent.run("hi")


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streamed"])
async def test_a_reply_that_drips_for_10_s_is_cut_at_a_half_second_timeout(
    streaming: bool,
) -> None:
    with FakeAnthropic([Reply(message=LATE, drip=10.0)]) as fake:
        started = time.monotonic()
        model = model_for(fake, timeout=0.5)
        async with Agent(model, backoff=Backoff.none(), model_retries=0) as agent:
            with pytest.raises(ModelError, match=r"timed out.*0\.5 s") as caught:
                await ask(agent, streaming)
        assert time.monotonic() - started < 3
    assert caught.value.retryable


async def test_a_silent_server_costs_one_timeout_per_attempt() -> None:
    with FakeAnthropic([Reply(message=LATE, delay=10.0) for _ in range(3)]) as fake:
        started = time.monotonic()
        async with Agent(model_for(fake, timeout=0.5), backoff=Backoff.none()) as agent:
            with pytest.raises(ModelError, match="timed out"):
                await agent.run("hi")
        assert time.monotonic() - started < 6
    assert len(fake.requests) == 3
