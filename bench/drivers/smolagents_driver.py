"""smolagents' `ToolCallingAgent`, driven by a custom `Model` that returns tool calls.

smolagents is synchronous: its tools are plain functions (async tools are reported n/a), a
run blocks its thread, the calls of one step run in a thread pool, and the model answers by
calling its `final_answer` tool. An agent keeps its run's memory on itself, so concurrent runs
need one agent each: every thread builds its own.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import threading
import time
from typing import Any

import common
from smolagents import ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.monitoring import LogLevel


class BenchModel(Model):
    """Replies with the calls `common.next_reply()` asks for; no other work."""

    def generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatMessage:
        if wait := common.latency():
            time.sleep(wait)
        calls = common.next_reply()
        if calls is None:
            wanted = [("final", "final_answer", json.dumps({"answer": common.FINAL_TEXT}))]
        else:
            wanted = [(c.id, c.name, c.arguments_json) for c in calls]
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[
                ChatMessageToolCall(
                    id=call_id,
                    type="function",
                    function=ChatMessageToolCallFunction(name=name, arguments=arguments),
                )
                for call_id, name, arguments in wanted
            ],
        )


class SmolagentsRunner:
    def __init__(self, plan: common.Plan) -> None:
        self.plan = plan
        self.tool = tool(plan.function)
        self.local = threading.local()

    def _agent(self) -> ToolCallingAgent:
        agent: ToolCallingAgent | None = getattr(self.local, "agent", None)
        if agent is None:
            agent = ToolCallingAgent(
                tools=[self.tool],
                model=BenchModel(model_id="bench"),
                max_steps=self.plan.turns + 1,
                verbosity_level=LogLevel.OFF,
            )
            self.local.agent = agent
        return agent

    def run(self) -> str:
        return str(self._agent().run(common.PROMPT))


class SmolagentsDriver:
    name = "smolagents"

    def versions(self) -> dict[str, str]:
        return {
            "smolagents": importlib.metadata.version("smolagents"),
            "python": platform.python_version(),
        }

    def supports(self, plan: common.Plan) -> str | None:
        if plan.is_async:
            return "n/a (smolagents tools are synchronous)"
        return None

    def make(self, plan: common.Plan) -> SmolagentsRunner:
        return SmolagentsRunner(plan)


if __name__ == "__main__":
    common.main(SmolagentsDriver())
