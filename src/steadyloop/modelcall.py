"""One model call of a run: retries, the effects' hook, streaming, fallback.

A run builds the request and hands it here. The request goes to the first model of the
agent's chain (a `Fallback`, or the one model) with its retries; a model whose last attempt
failed hands it to the next. The effects' `model_call` hook is around all of it, once per
call, and sees the reply priced and naming the model that answered. A streamed call tells
each part as it arrives and closes the stream as soon as the reply is in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from steadyloop.cost import has_price, priced
from steadyloop.effects import ModelCall
from steadyloop.errors import ConfigError, ModelError
from steadyloop.events import Event, ModelFallback, ModelRetry
from steadyloop.fallback import Fallback, answered_by, chain, first_answer
from steadyloop.messages import AssistantMessage
from steadyloop.models.base import Model, ModelRequest

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


def call_model(
    config: RunConfig,
    request: ModelRequest,
    effects: Effects | None,
    *,
    run_id: str | None,
    turn: int,
    streaming: bool,
    emit: Callable[[Event], None],
) -> Awaitable[AssistantMessage]:
    """The reply to `request`, turn `turn` of run `run_id`; retries and moves down the
    fallback chain are told to `emit` (so are a streamed call's parts)."""
    call = _Call(config, request, turn, streaming, emit)
    if effects is None:
        return call.answer()
    model_call = ModelCall(run_id, turn, config.model.name, request)
    return effects.model_call(model_call, call.answer)


class _Call:
    """One model call: its request, and where its retries, moves and streamed parts are told."""

    __slots__ = ("config", "emit", "request", "streaming", "turn")

    def __init__(
        self,
        config: RunConfig,
        request: ModelRequest,
        turn: int,
        streaming: bool,
        emit: Callable[[Event], None],
    ) -> None:
        self.config = config
        self.request = request
        self.turn = turn
        self.streaming = streaming
        self.emit = emit

    def answer(self) -> Awaitable[AssistantMessage]:
        """The reply of the first model of the chain that answers (of the one model, with
        no chain to go down)."""
        model = self.config.model
        if not isinstance(model, Fallback):
            return self.with_retries(model)
        return first_answer(model, self.with_retries, self.moved)

    async def with_retries(self, model: Model) -> AssistantMessage:
        """`model`'s reply, asked again up to `model_retries` times while it fails with a
        retryable `ModelError` (`Backoff.worth_retrying`; each retry told before its wait);
        the last failure is raised as it is. The reply is priced, and names the model, as the
        effects see it."""
        config, attempt = self.config, 1
        while True:
            try:
                if self.streaming:
                    reply = await _streamed(self.request, model, self.emit)
                else:
                    reply = await model.request(self.request)
                break
            except ModelError as exc:
                if attempt > config.model_retries or not config.backoff.worth_retrying(exc):
                    raise
                seconds = config.backoff.wait(attempt, exc)
                self.emit(ModelRetry(self.turn, attempt + 1, str(exc), seconds))
            await asyncio.sleep(seconds)
            attempt += 1
        return await priced(answered_by(reply, model), model)

    def moved(self, failed: Model, next_model: Model, error: ModelError) -> None:
        self.emit(ModelFallback(self.turn, failed.name, next_model.name, str(error)))


async def _streamed(
    request: ModelRequest, model: Model, emit: Callable[[Event], None]
) -> AssistantMessage:
    """One streamed attempt: each part told to `emit`, the reply returned."""
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
