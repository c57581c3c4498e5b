"""Agents `steadyloop mcp serve --agent mcp_serve.agents:NAME` serves in the tests."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_serve.shop_tools import price
from steadyloop import Agent, AssistantMessage, Limits, ToolCall
from steadyloop.messages import Message
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec

PARTIAL = "Still comparing the prices of tea"


def _never_done(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    """Says how far it got and asks for one more price, every turn: only a limit stops it."""
    call = ToolCall(f"call-{len(messages)}", "price", '{"item": "tea"}')
    return AssistantMessage(PARTIAL, (call,))


def never_done() -> Agent:
    """An agent that never answers within its two turns."""
    return Agent(FunctionModel(_never_done), tools=[price], limits=Limits(max_turns=2))
