"""Every exported error survives pickle with its message and attributes: DBOS and Ray store the
errors a run raised that way, and a worker's error must reach the caller whole."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import steadyloop
from steadyloop import Agent, AssistantMessage, Limits, ToolCall, ToolResult, tool
from steadyloop import errors as errors_module
from steadyloop.errors import (
    ContextWindowExceeded,
    FatalToolError,
    LimitExceeded,
    ModelError,
    RunLogError,
    TurnLimitExceeded,
)
from steadyloop.result import RunResult
from steadyloop.testing import ScriptedModel


def exported_errors() -> list[type[BaseException]]:
    """The exception classes `steadyloop.errors` and `steadyloop` export."""
    names = {*errors_module.__all__, *steadyloop.__all__}
    found = {getattr(errors_module, n, None) or getattr(steadyloop, n) for n in names}
    return sorted(
        (c for c in found if isinstance(c, type) and issubclass(c, BaseException)),
        key=lambda c: c.__name__,
    )


def look_up(order: str) -> str:
    """Looks an order up.

    Args:
        order: the order's id.
    """
    return f"order {order} is open"


def raised_limit() -> LimitExceeded:
    """The error a real run raised at its turn limit, after one tool call was answered."""
    reply = AssistantMessage(tool_calls=(ToolCall("c1", "look_up", {"order": "A7"}),))
    agent = Agent(ScriptedModel([reply]), tools=[tool(look_up)], limits=Limits(max_turns=1))
    with pytest.raises(TurnLimitExceeded) as stopped:
        agent.run_sync("look up A7")
    return stopped.value


def an_instance(cls: type[BaseException], result: RunResult[Any]) -> BaseException:
    """An instance of `cls` with every attribute it carries set to something other than its
    default."""
    if issubclass(cls, LimitExceeded):
        return cls("stopped: limit reached", result)
    if issubclass(cls, ContextWindowExceeded):
        return cls("prompt too long", status=400, provider="openai", limit=128_000)
    if issubclass(cls, ModelError):
        return cls("rate limited", retryable=True, status=429, provider="openai", retry_after=2.5)
    if issubclass(cls, RunLogError):
        return cls("disk full", "run-7")
    error = cls("credentials revoked")
    if isinstance(error, FatalToolError):
        error.result = result
    return error


@pytest.mark.parametrize("cls", exported_errors(), ids=lambda c: c.__name__)
def test_every_exported_error_survives_pickle(cls: type[BaseException]) -> None:
    result = raised_limit().result
    error = an_instance(cls, result)

    copy = pickle.loads(pickle.dumps(error))

    assert type(copy) is cls
    assert str(copy) == str(error)
    assert vars(copy) == vars(error)
    if isinstance(error, LimitExceeded | FatalToolError):
        assert isinstance(copy, LimitExceeded | FatalToolError)
        assert copy.result == result
        assert copy.result is not None
        assert copy.result.messages[-1] == ToolResult("c1", "look_up", "order A7 is open")


def test_the_exported_errors_include_every_kind_that_carries_a_result() -> None:
    names = {c.__name__ for c in exported_errors()}
    assert {"LimitExceeded", "TurnLimitExceeded", "FatalToolError", "ModelError"} <= names


def test_a_raised_limit_and_a_raised_fatal_tool_error_survive_pickle() -> None:
    def revoke() -> str:
        """Revokes the credentials."""
        raise FatalToolError("credentials revoked")

    stop = AssistantMessage(tool_calls=(ToolCall("c1", "revoke", {}),))
    with pytest.raises(FatalToolError) as fatal:
        Agent(ScriptedModel([stop]), tools=[tool(revoke)]).run_sync("revoke them")

    for raised in (fatal.value, raised_limit()):
        copy = pickle.loads(pickle.dumps(raised))
        assert type(copy) is type(raised)
        assert str(copy) == str(raised)
        assert copy.result is not None
        assert raised.result is not None
        assert copy.result == raised.result
        assert isinstance(copy.result.messages[-1], ToolResult)
        assert copy.result.messages[-1] == raised.result.messages[-1]
