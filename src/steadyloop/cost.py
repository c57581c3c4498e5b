"""What a model reply cost, from the maintained `genai-prices` tables (never a hand-kept list).

Prices are looked up for models named `PROVIDER:MODEL`, the spec strings of the adapters
("openai:gpt-4.1-mini"); a model named without a provider (the fakes: "test", "function") has
no price, and nothing is looked up for it. The tables are large, so `genai_prices` is first
imported in a worker thread: the event loop, and the other runs on it, go on meanwhile.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from typing import TYPE_CHECKING

from steadyloop.messages import AssistantMessage, Usage

if TYPE_CHECKING:
    from steadyloop.models.base import Model

__all__ = ["has_price", "priced", "provider_and_model"]

# Spec prefixes whose provider has another name in the price tables and in OpenTelemetry.
_PROVIDER_NAMES = {"openai-responses": "openai", "vertex": "google"}


def provider_and_model(model: Model | str) -> tuple[str | None, str]:
    """The provider and the bare model name of a model (or spec) named `PROVIDER:MODEL`
    ("openai", "gpt-4.1-mini"); (None, name) for a model named without a provider."""
    name = model if isinstance(model, str) else model.name
    prefix, colon, bare = name.partition(":")
    if not colon or not prefix or not bare:
        return None, name
    return _PROVIDER_NAMES.get(prefix, prefix), bare


async def priced(reply: AssistantMessage, model: Model) -> AssistantMessage:
    """`reply` with `usage.cost_usd` set from its token counts, when the model that made it
    (`reply.model`, else `model`) has a price."""
    provider, bare = provider_and_model(reply.model or model)
    if provider is None or reply.usage is None:
        return reply
    cost = await _cost_off_loop_at_first(reply.usage, provider, bare)
    if cost is None:
        return reply
    return dataclasses.replace(reply, usage=dataclasses.replace(reply.usage, cost_usd=cost))


async def has_price(model: Model) -> bool:
    """Whether the price tables know the model."""
    provider, bare = provider_and_model(model)
    if provider is None:
        return False
    return await _cost_off_loop_at_first(Usage(), provider, bare) is not None


async def _cost_off_loop_at_first(usage: Usage, provider: str, bare: str) -> float | None:
    if "genai_prices" in sys.modules:
        return _cost(usage, provider, bare)
    return await asyncio.to_thread(_cost, usage, provider, bare)


def _cost(usage: Usage, provider: str, bare: str) -> float | None:
    """The cost in dollars (the tables' Decimal converted once), None when they do not list
    the model."""
    import genai_prices

    counts = genai_prices.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    try:
        price = genai_prices.calc_price(counts, bare, provider_id=provider)
    except LookupError:
        return None
    return float(price.total_price)
