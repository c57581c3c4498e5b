"""`RunContext`: what a tool, an approver or callable instructions know about the run they serve.

A tool parameter annotated `RunContext[...]` is left out of the schema the model sees and filled
in when the tool runs: `ctx.deps` is the object passed as `run(..., deps=...)` (a database, the
user, an HTTP client), never logged or serialised. The dispatcher fills it in, as a parameter of
the bound call, with the context the loop makes for each call; a call to a tool that takes no
context makes none and pays nothing.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from steadyloop.errors import ConfigError
from steadyloop.frozen import slot_setters
from steadyloop.messages import Message, Usage

if TYPE_CHECKING:
    from steadyloop.tools import Tool

__all__ = [
    "Instructions",
    "RunContext",
    "check_deps",
    "check_instructions",
    "context_type",
    "make_instructions",
]

DepsT = TypeVar("DepsT")

Instructions = str | Callable[["RunContext[Any]"], str | Awaitable[str]]


@dataclass(frozen=True, slots=True, init=False)
class RunContext(Generic[DepsT]):
    """The run a tool call (or an approver, or callable instructions) belongs to.

    `deps` is what the run was given as `deps=`; `turn` counts model calls from 1 (the calls of
    the first reply have turn 1); `call_id` is the tool call's id (None outside a call);
    `usage` is the run's usage so far, including the model call that asked for the tool;
    `messages` the transcript so far (read-only).
    """

    deps: DepsT
    run_id: str | None = None
    turn: int = 0
    call_id: str | None = None
    usage: Usage = field(default_factory=Usage)
    messages: tuple[Message, ...] = ()

    def __init__(
        self,
        deps: DepsT,
        run_id: str | None = None,
        turn: int = 0,
        call_id: str | None = None,
        usage: Usage | None = None,
        messages: tuple[Message, ...] = (),
    ) -> None:
        # One is made for every call that takes one: its slots are set directly (see
        # `steadyloop.frozen`).
        set_deps, set_run_id, set_turn, set_call_id, set_usage, set_messages = _CONTEXT_SLOTS
        set_deps(self, deps)
        set_run_id(self, run_id)
        set_turn(self, turn)
        set_call_id(self, call_id)
        set_usage(self, Usage() if usage is None else usage)
        set_messages(self, messages)


_CONTEXT_SLOTS = slot_setters(RunContext)


def context_type(annotation: Any) -> tuple[bool, Any]:
    """(True, the deps type) when `annotation` is `RunContext` or `RunContext[X]`."""
    if annotation is RunContext:
        return True, Any
    if typing.get_origin(annotation) is RunContext:
        (deps,) = typing.get_args(annotation)
        return True, deps
    return False, None


def check_deps(tools: Sequence[Tool], deps: Any) -> None:
    """`ConfigError` when a tool's `RunContext[X]` cannot take `deps` (checked where an
    `isinstance` can tell: plain classes and unions of them, such as `Shop | None`; not
    `Any`, protocols or type variables)."""
    if deps is None:
        return
    for tool in tools:
        for param, expected in tool.context_types.items():
            if _fits(deps, expected) is False:
                name = _type_name(expected)
                hint = f"deps={name}(...)" if isinstance(expected, type) else f"deps of type {name}"
                raise ConfigError(
                    f"tool {tool.name!r}: its {param} is RunContext[{name}] but deps is a "
                    f"{type(deps).__name__}: pass {hint}, or change the annotation"
                )


def _fits(deps: Any, expected: Any) -> bool | None:
    """Whether `deps` is an `expected`; None when that cannot be told."""
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        fits = [_fits(deps, option) for option in typing.get_args(expected)]
        if True in fits:
            return True
        return None if None in fits else False
    cls = typing.get_origin(expected) or expected
    if not isinstance(cls, type):
        return None
    try:
        return isinstance(deps, cls)
    except TypeError:  # a protocol that is not runtime-checkable
        return None


def _type_name(expected: Any) -> str:
    """`Shop`, `Shop | None`, `list[str]`: the annotation as written."""
    if typing.get_origin(expected) in (typing.Union, types.UnionType):
        return " | ".join(_type_name(option) for option in typing.get_args(expected))
    if expected is type(None):
        return "None"
    return expected.__name__ if isinstance(expected, type) else repr(expected)


def check_instructions(source: Any) -> None:
    """`ConfigError` unless `source` is text, or a function taking the run's context."""
    if source is None or isinstance(source, str):
        return
    if not callable(source):
        raise ConfigError(
            f"instructions must be a str or fn(ctx: RunContext) -> str, got {type(source).__name__}"
        )
    try:
        inspect.signature(source).bind(None)
    except TypeError:
        raise ConfigError(
            "callable instructions are called with the run's context, one argument: define "
            "them as fn(ctx: RunContext) -> str (lambda ctx: ...)"
        ) from None
    except ValueError:  # no signature to read (some builtins): it is called as it is
        return


async def make_instructions(source: Instructions | None, context: RunContext[Any]) -> str | None:
    """The system prompt: `source` itself, or what the callable makes of the context."""
    if source is None or isinstance(source, str):
        return source
    text = source(context)
    if inspect.isawaitable(text):
        text = await text
    if not isinstance(text, str):
        raise ConfigError(
            f"instructions returned {type(text).__name__}, not str: return the system prompt text"
        )
    return text
