"""One retry layer: the loop retries a failed call to Claude, the SDK does not retry it again."""

from __future__ import annotations

from email.utils import formatdate
from time import time

import pytest
from anthropic_fake_server import (
    FakeAnthropic,
    Reply,
    error,
    message,
    model_for,
    stream_events,
    text,
)

from steadyloop import Agent
from steadyloop.errors import ModelError
from steadyloop.retry import Backoff


async def test_a_persistent_529_costs_one_request_plus_the_loops_retries() -> None:
    replies = [error(529, "overloaded_error", "Overloaded") for _ in range(10)]
    with FakeAnthropic(replies) as fake:
        async with Agent(model_for(fake), backoff=Backoff.none()) as agent:
            with pytest.raises(ModelError, match="Overloaded") as caught:
                await agent.run("hi")
    assert caught.value.retryable
    assert len(fake.requests) == 3  # model_retries=2 by default; not 3 x 3


async def test_the_error_after_the_last_retry_does_not_promise_another() -> None:
    cut = stream_events(message(text("a whole answer")).message or {})[:4]
    with FakeAnthropic([Reply(events=cut, broken=True) for _ in range(3)]) as fake:
        async with Agent(model_for(fake), backoff=Backoff.none()) as agent:
            with pytest.raises(ModelError) as caught:
                async for _ in agent.stream("go"):
                    pass
    assert len(fake.requests) == 3
    assert "retry" not in str(caught.value)


IN_30_SECONDS = "an HTTP date 30 s ahead"  # made when the test runs, not when it is collected


def sent(headers: dict[str, str]) -> dict[str, str]:
    return {
        k: formatdate(time() + 30, usegmt=True) if v == IN_30_SECONDS else v
        for k, v in headers.items()
    }


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        ({"retry-after-ms": "1500"}, 1.5, 1.5),
        ({"Retry-After": "2"}, 2.0, 2.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25, 0.25),
        ({"retry-after": IN_30_SECONDS}, 20.0, 31.0),
        ({"retry-after": "soon"}, None, None),
    ],
)
async def test_retry_after_is_read_in_seconds_milliseconds_or_as_a_date(
    headers: dict[str, str], low: float | None, high: float | None
) -> None:
    """The same reading as every other adapter's (one parser)."""
    limited = error(429, "rate_limit_error", "slow down", sent(headers))
    with FakeAnthropic([limited]) as fake:
        async with Agent(model_for(fake), backoff=Backoff.none(), model_retries=0) as agent:
            with pytest.raises(ModelError) as caught:
                await agent.run("hi")
    wait = caught.value.retry_after
    if low is None:
        assert wait is None
    else:
        assert wait is not None
        assert low <= wait <= (high or low)
