"""The effects seam: one place around each model call and each tool call.

Every effect of a run goes through here as a function of serialisable inputs returning a
serialisable output: a model call takes a `ModelRequest` and returns an `AssistantMessage`; a tool
call takes a `ToolCall` and returns a `ToolCallFinished` (its result, full output, duration and
attempts). An `Effects` object wraps them: it may look at the input, run the call (`proceed()`),
look at or replace the output, or raise. Tracing, approvals, rate limits and durable engines are
each one of these; `Agent(effects=[...])` nests them, the first outermost. With no effects the
loop calls straight through, at no cost.

The model hook wraps the whole call, retries included (the retries are the loop's business);
the tool hook wraps the whole call, from an unknown name or bad arguments to the rendered
result. A tool call is read and validated once, before its hooks see it: `ToolInvocation`
carries the validated arguments (None when the call cannot run; `proceed()` then answers it
with the error the model reads). The hooks of one turn's tool calls start in call order. A tool
hook may also run the call with other arguments, `proceed(arguments)` (validated again; the
result says a reviewer changed them), which is how an approval edits a call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from steadyloop.frozen import slot_setters

if TYPE_CHECKING:
    from steadyloop.events import ToolCallFinished
    from steadyloop.messages import AssistantMessage, ToolCall
    from steadyloop.models.base import ModelRequest
    from steadyloop.tools import Tool

__all__ = ["Effects", "ModelCall", "Proceed", "ToolInvocation", "nest"]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A model call about to be made: `turn` counts this run's model calls from 1."""

    run_id: str | None
    turn: int
    model: str
    request: ModelRequest


@dataclass(frozen=True, slots=True, init=False)
class ToolInvocation:
    """A tool call about to be answered: `tool` is None when the model named no such tool;
    `arguments` the call's JSON object once the tool has validated it, None when the call
    cannot run (no such tool, arguments it cannot take). A hook inside one that ran the call
    with other arguments sees those, which are validated when the call runs."""

    run_id: str | None
    turn: int
    call: ToolCall
    tool: Tool | None
    arguments: Mapping[str, Any] | None = None

    def __init__(
        self,
        run_id: str | None,
        turn: int,
        call: ToolCall,
        tool: Tool | None,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        # One is made for every hooked call: its slots are set directly (see `steadyloop.frozen`).
        set_run_id, set_turn, set_call, set_tool, set_arguments = _INVOCATION_SLOTS
        set_run_id(self, run_id)
        set_turn(self, turn)
        set_call(self, call)
        set_tool(self, tool)
        set_arguments(self, arguments)


_INVOCATION_SLOTS = slot_setters(ToolInvocation)


class Proceed(Protocol):
    """Answers the tool call: as the model made it, or with `arguments` instead."""

    def __call__(
        self, arguments: Mapping[str, Any] | None = None, /
    ) -> Awaitable[ToolCallFinished]: ...


class Effects:
    """Around-hooks for the effects of a run; the defaults just proceed. Subclass and override."""

    __slots__ = ()  # a subclass without slots of its own still gets a `__dict__`

    async def model_call(
        self, call: ModelCall, proceed: Callable[[], Awaitable[AssistantMessage]]
    ) -> AssistantMessage:
        """Wraps one model call (retries included); returns its reply."""
        return await proceed()

    async def tool_call(self, call: ToolInvocation, proceed: Proceed) -> ToolCallFinished:
        """Wraps one tool call; returns how it was answered."""
        return await proceed()


class _Nested(Effects):
    """Several effects, the first outermost. Its hooks hand back the outer hook's coroutine
    instead of awaiting it in one of their own: no frame of theirs stays alive during the call."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, outer: Effects, inner: Effects) -> None:
        self._outer = outer
        self._inner = inner

    def model_call(
        self, call: ModelCall, proceed: Callable[[], Awaitable[AssistantMessage]]
    ) -> Coroutine[Any, Any, AssistantMessage]:
        return self._outer.model_call(call, partial(self._inner.model_call, call, proceed))

    def tool_call(
        self, call: ToolInvocation, proceed: Proceed
    ) -> Coroutine[Any, Any, ToolCallFinished]:
        return self._outer.tool_call(call, _Inner(self._inner, call, proceed))


class _Inner:
    """The outer hook's `proceed` of a `_Nested`: the inner hook, with the call as made or with
    the arguments the outer one gave. One small object per call rather than a closure."""

    __slots__ = ("_call", "_effects", "_proceed")

    def __init__(self, effects: Effects, call: ToolInvocation, proceed: Proceed) -> None:
        self._effects = effects
        self._call = call
        self._proceed = proceed

    def __call__(
        self, arguments: Mapping[str, Any] | None = None, /
    ) -> Awaitable[ToolCallFinished]:
        call, proceed = self._call, self._proceed
        if arguments is None:
            return self._effects.tool_call(call, proceed)
        edited = replace(
            call, call=replace(call.call, arguments=dict(arguments)), arguments=arguments
        )

        def edited_proceed(
            again: Mapping[str, Any] | None = None, /
        ) -> Awaitable[ToolCallFinished]:
            return proceed(arguments if again is None else again)

        return self._effects.tool_call(edited, edited_proceed)


def nest(effects: Effects | Sequence[Effects] | None) -> Effects | None:
    """One `Effects` for several (the first outermost); None when there are none."""
    if effects is None or isinstance(effects, Effects):
        return effects
    nested: Effects | None = None
    for effect in reversed(effects):
        nested = effect if nested is None else _Nested(effect, nested)
    return nested
