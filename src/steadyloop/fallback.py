"""`Fallback(*models)`: a chain of models, so that a provider outage costs a run seconds, not
the run.

A `Fallback` is a `Model`. In a run, each model call goes to the first model exactly as if it
were alone (its retries, waits and `Retry-After` included); only when its last attempt failed
with an error `on` accepts does the same request go to the next model, with its own retries;
and so on. The next model call starts again from the first model. Never moved on, whatever `on`
says: a `ConfigError` (a key, model or SDK to fix, not an outage) and a `ContextWindowExceeded`
(the history is too long for the run to go on: compaction or `ContextLimitExceeded` are the
run's answer). Every reply says which model made it (`AssistantMessage.model`).

Its name, `fallback:A,B`, is itself a spec that builds the same chain, so the run log,
`resume` and `batch` rebuild it.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from steadyloop.errors import ConfigError, ContextWindowExceeded, ModelError
from steadyloop.frozen import slot_setters
from steadyloop.messages import AssistantMessage
from steadyloop.models import resolve_model
from steadyloop.models.base import Model, ModelRequest, StreamPart

__all__ = ["Fallback", "chain", "first_answer", "from_spec"]

PREFIX = "fallback"
T = TypeVar("T")


class Fallback(Model):
    """The first of `models` that answers each model call.

    Args:
        models: two or more, each a `Model` or a spec string ("openai:gpt-4.1-mini").
        on: `on(error) -> bool` says whether a `ModelError` that outlasted a model's retries
            moves the call on to the next model. Default: `error.retryable` (429, 5xx, 529,
            timeouts, connection errors, cut streams). A `ConfigError` or a
            `ContextWindowExceeded` never moves on.
        settings: request settings given to every model named by a spec string (per-model
            settings: pass model objects).

    Outside a run (`await fallback.request(...)`), each model is tried once, in order.
    """

    def __init__(
        self,
        *models: Model | str,
        on: Callable[[ModelError], bool] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        if len(models) < 2:
            raise ConfigError("Fallback needs at least two models")
        made = tuple(resolve_model(m, settings=settings if isinstance(m, str) else None)
                     for m in models)  # fmt: skip
        names = [model.name for model in made]
        for model in made:
            if isinstance(model, Fallback):
                raise ConfigError(
                    f"a Fallback cannot hold another Fallback ({model.name}): list its models "
                    "in one Fallback"
                )
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ConfigError(
                f"Fallback names {', '.join(repeated)} more than once: give each model once "
                "(a model's own retries are Agent(model_retries=...))"
            )
        self.models = made
        self.on = on
        self.name = f"{PREFIX}:{','.join(names)}"

    def moves_on(self, error: ModelError) -> bool:
        """Whether `error`, the last of a model's attempts, sends the call to the next model."""
        if isinstance(error, ContextWindowExceeded):
            return False
        return self.on(error) if self.on is not None else error.retryable

    async def request(self, request: ModelRequest) -> AssistantMessage:
        """The first reply of the models, each tried once, in order."""

        async def attempt(model: Model) -> AssistantMessage:
            return answered_by(await model.request(request), model)

        return await first_answer(self, attempt)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        """The stream of the first model that answers; the deltas a failed model streamed are
        void, as those of a failed retry are."""
        for index, model in enumerate(self.models):
            try:
                async for part in model.stream(request):
                    yield answered_by(part, model) if isinstance(part, AssistantMessage) else part
                return
            except ModelError as exc:
                if index + 1 == len(self.models) or not self.moves_on(exc):
                    raise

    async def aclose(self) -> None:
        for model in self.models:
            await model.aclose()


def chain(model: Model) -> tuple[Model, ...]:
    """The models a model call may go to, in order: a `Fallback`'s, or the model alone."""
    return model.models if isinstance(model, Fallback) else (model,)


async def first_answer(
    model: Model,
    attempt: Callable[[Model], Awaitable[T]],
    moved: Callable[[Model, Model, ModelError], None] | None = None,
) -> T:
    """`attempt(each)` for each model of `chain(model)` in turn, until one returns; a failure
    goes on to the next model only when the chain `moves_on` it (`moved(failed, next, error)`
    is told first); the last model's failure, or one that does not move on, is raised."""
    models = chain(model)
    for index, each in enumerate(models):
        try:
            return await attempt(each)
        except ModelError as exc:
            if index + 1 == len(models) or not isinstance(model, Fallback):
                raise
            if not model.moves_on(exc):
                raise
            if moved is not None:
                moved(each, models[index + 1], exc)
    raise AssertionError("a chain has at least one model")  # pragma: no cover


def answered_by(reply: AssistantMessage, model: Model) -> AssistantMessage:
    """`reply` marked as made by `model` (its spec in `AssistantMessage.model`), unless it
    names the model that made it already (a recorded reply played back by a replay)."""
    if reply.model is not None:
        return reply
    if type(reply) is not AssistantMessage:
        return dataclasses.replace(reply, model=model.name)
    # Copied slot by slot, as every reply of every run is: a fraction of `dataclasses.replace`'s
    # cost, and the values were checked when the reply was made.
    named = object.__new__(AssistantMessage)
    for set_slot, value in zip(_REPLY_SETTERS, _reply_values(reply), strict=True):
        set_slot(named, value)
    _SET_MODEL(named, model.name)
    return named


_reply_values = operator.attrgetter(*(f.name for f in dataclasses.fields(AssistantMessage)))
_REPLY_SETTERS = slot_setters(AssistantMessage)
_SET_MODEL = AssistantMessage.__dict__["model"].__set__


def from_spec(name: str, *, settings: Mapping[str, Any] | None = None) -> Fallback:
    """The chain for the spec `fallback:A,B,...` (the models' specs, comma-separated)."""
    specs: Sequence[str] = [part.strip() for part in name.split(",")]
    if any(not spec for spec in specs):
        raise ConfigError(
            f"{PREFIX}:{name} has an empty model spec: write fallback:MODEL,MODEL "
            "(e.g. fallback:openai:gpt-4.1-mini,anthropic:claude-sonnet-4-6)"
        )
    return Fallback(*specs, settings=settings)
