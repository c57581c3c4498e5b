"""One model call of a run: retries, the effects' hook, streaming, fallback.

A run builds the request and hands it here. The request goes to the first model of the
agent's chain (a `Fallback`, or the one model) with its retries; a model whose last attempt
failed hands it to the next. The effects' `model_call` hook is around all of it, once per
call, and sees the reply priced and naming the model that answered. A streamed call tells
each part as it arrives and closes the stream as soon as the reply is in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from steadyloop.cost import has_price, priced
from steadyloop.effects import ModelCall
from steadyloop.errors import ConfigError, ModelError
from steadyloop.events import Event, ModelFallback, ModelRetry
from steadyloop.fallback import answered_by, chain, first_answer
from steadyloop.messages import AssistantMessage
from steadyloop.models.base import Model, ModelRequest
from steadyloop.retry import retry_model_call

if TYPE_CHECKING:
    from steadyloop.config import RunConfig
    from steadyloop.effects import Effects

__all__ = ["call_model", "require_prices"]


async def require_prices(model: Model) -> None:
    """Refuses a cost limit the run cannot keep: each model of the chain needs a price."""
    for each in chain(model):
        if not await has_price(each):
            raise ConfigError(
                f"Limits(max_cost_usd=...) needs the price of {each.name}, and the "
                "price tables (genai-prices) have none: name the model PROVIDER:MODEL "
                "as the tables do (openai:gpt-4.1-mini), or drop the cost limit"
            )


async def call_model(
    config: RunConfig,
    request: ModelRequest,
    effects: Effects | None,
    *,
    run_id: str | None,
    turn: int,
    streaming: bool,
    emit: Callable[[Event], None],
) -> AssistantMessage:
    """The reply to `request`, turn `turn` of run `run_id`; retries and moves down the
    fallback chain are told to `emit` (so are a streamed call's parts)."""

    def announce(attempt: int, error: ModelError, wait: float) -> None:
        emit(ModelRetry(turn, attempt, str(error), wait))

    def moved(failed: Model, next_model: Model, error: ModelError) -> None:
        emit(ModelFallback(turn, failed.name, next_model.name, str(error)))

    async def with_retries(model: Model) -> AssistantMessage:
        reply = await retry_model_call(
            lambda: _request(request, model, streaming, emit),
            config.model_retries,
            config.backoff,
            announce,
        )
        # what the effects see is priced, and names the model that answered
        return await priced(answered_by(reply, model), model)

    async def call_with_retries() -> AssistantMessage:
        return await first_answer(config.model, with_retries, moved)

    if effects is None:
        return await call_with_retries()
    model_call = ModelCall(run_id, turn, config.model.name, request)
    return await effects.model_call(model_call, call_with_retries)


async def _request(
    request: ModelRequest, model: Model, streaming: bool, emit: Callable[[Event], None]
) -> AssistantMessage:
    """One attempt: the model's reply, streamed (each part told to `emit`) or not."""
    if not streaming:
        return await model.request(request)
    parts = model.stream(request)
    try:
        async for part in parts:
            if isinstance(part, AssistantMessage):
                return part
            emit(part)
    finally:
        # Close the stream (and its connection) as soon as the reply is in.
        close = getattr(parts, "aclose", None)
        if close is not None:
            await close()
    raise ModelError(f"{model.name}: the stream ended without a reply", retryable=True)
