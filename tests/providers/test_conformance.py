"""Every provider adapter keeps one contract, through its official SDK against its fake server
(see `adapters.py`): one retry layer (the loop's, never the SDK's on top), one Retry-After
parser, one overall timeout per call, the same errors for the same failures.

A test here runs once per adapter, as `stores/test_conformance.py` runs once per store; what
only one provider does stays in its own folder."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from providers.adapters import Adapter, ask
from steadyloop import Agent, ConfigError
from steadyloop.errors import ModelError
from steadyloop.retry import Backoff

# -- one retry layer -----------------------------------------------------------------------


async def test_a_persistent_server_error_costs_one_request_plus_the_loops_retries(
    adapter: Adapter,
) -> None:
    adapter.queue(*[adapter.unavailable()] * 10)
    async with Agent(adapter.model(), backoff=Backoff.none()) as agent:
        with pytest.raises(ModelError, match=adapter.unavailable_text) as info:
            await agent.run("hi")
    assert info.value.retryable
    assert info.value.status in (503, 529)
    assert adapter.requests == 3  # model_retries=2 by default; not 3 x 3


@pytest.mark.parametrize(
    ("kind", "headers"),
    [("rate_limited", {"retry-after-ms": "400"}), ("unavailable", {"retry-after": "0.4"})],
)
async def test_a_retryable_error_is_retried_after_the_servers_retry_after(
    adapter: Adapter, kind: str, headers: dict[str, str]
) -> None:
    """429 or 503/529 with a Retry-After: the loop waits at least that long, then succeeds."""
    failure = getattr(adapter, kind)(headers)
    adapter.queue(failure, adapter.answer("ok"))
    started = time.monotonic()
    async with Agent(adapter.model(), backoff=Backoff.none()) as agent:
        result = await agent.run("hi")
    assert result.output == "ok"
    assert adapter.requests == 2
    assert time.monotonic() - started >= 0.35


async def test_the_error_after_the_last_retry_does_not_promise_another(adapter: Adapter) -> None:
    adapter.queue(*[adapter.cut_stream()] * 3)
    async with Agent(adapter.model(), backoff=Backoff.none()) as agent:
        with pytest.raises(ModelError) as info:
            await ask(agent, streaming=True)
    assert adapter.requests == 3
    assert "retry" not in str(info.value)

    async with Agent(adapter.unreachable(), backoff=Backoff.none()) as agent:
        with pytest.raises(ModelError, match="Connection error") as refused:
            await agent.run("hi")
    assert refused.value.retryable
    assert "retry" not in str(refused.value)


async def test_an_sdk_retry_can_still_be_asked_for(adapter: Adapter) -> None:
    """`max_retries` defaults to 0 and still works when set."""
    adapter.queue(adapter.unavailable(), adapter.answer("ok"))
    model = adapter.model(max_retries=1)
    async with Agent(model, backoff=Backoff.none(), model_retries=0) as agent:
        assert (await agent.run("hi")).output == "ok"
    assert adapter.requests == 2


IN_30_SECONDS = "an HTTP date 30 s ahead"  # made when the test runs, not when it is collected


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
    adapter: Adapter, headers: dict[str, str], low: float | None, high: float | None
) -> None:
    """Every adapter reads the header the same way (one parser)."""
    when = formatdate(time.time() + 30, usegmt=True)
    sent = {k: when if v == IN_30_SECONDS else v for k, v in headers.items()}
    adapter.queue(adapter.rate_limited(sent))
    async with Agent(adapter.model(), backoff=Backoff.none(), model_retries=0) as agent:
        with pytest.raises(ModelError) as info:
            await agent.run("hi")
    wait = info.value.retry_after
    if low is None:
        assert wait is None
    else:
        assert wait is not None
        assert low <= wait <= (high or low)


# -- one overall timeout -------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streamed"])
async def test_a_reply_that_drips_for_10_s_is_cut_at_a_half_second_timeout(
    adapter: Adapter, streaming: bool
) -> None:
    """A read timeout would never fire on a body kept busy: the call's whole time is bounded.
    The bound is generous: it proves the deadline holds, not how fast it fires."""
    adapter.queue(adapter.drip(10.0))
    started = time.monotonic()
    async with Agent(adapter.model(timeout=0.5), backoff=Backoff.none(), model_retries=0) as agent:
        with pytest.raises(ModelError, match=r"timed out.*0\.5 s") as info:
            await ask(agent, streaming)
    assert time.monotonic() - started < 3
    assert info.value.retryable


async def test_a_silent_server_costs_one_timeout_per_attempt(adapter: Adapter) -> None:
    adapter.queue(*[adapter.stall(10.0)] * 3)
    started = time.monotonic()
    async with Agent(adapter.model(timeout=0.5), backoff=Backoff.none()) as agent:
        with pytest.raises(ModelError, match="timed out"):
            await agent.run("hi")
    assert adapter.requests == 3
    assert time.monotonic() - started < 6


# -- the same errors for the same failures -------------------------------------------------


async def test_a_rejected_key_is_a_config_error_and_not_retried(adapter: Adapter) -> None:
    model = adapter.with_wrong_key(max_retries=2)
    adapter.queue(adapter.answer("never"))
    async with Agent(model, backoff=Backoff.none()) as agent:
        with pytest.raises(ConfigError, match=adapter.key_variable) as info:
            await agent.run("hi")
    assert adapter.rejected_key_text in str(info.value)
    assert adapter.requests == 1


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streamed"])
async def test_an_html_page_with_status_200_is_a_model_error(
    adapter: Adapter, streaming: bool
) -> None:
    adapter.queue(adapter.page("<html><body>Sign in to the proxy</body></html>"))
    async with Agent(adapter.model(), backoff=Backoff.none(), model_retries=0) as agent:
        with pytest.raises(ModelError) as info:
            await ask(agent, streaming)
    if not streaming:
        assert "Sign in to the proxy" in str(info.value)


async def test_json_that_is_not_a_reply_is_a_model_error(adapter: Adapter) -> None:
    adapter.queue(adapter.not_a_reply({"status": "ok", "service": "gateway"}))
    async with Agent(adapter.model(), backoff=Backoff.none(), model_retries=0) as agent:
        with pytest.raises(ModelError, match="gateway"):
            await agent.run("hi")
