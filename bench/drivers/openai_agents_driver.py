"""openai-agents, driven by a custom `Model` whose replies are Responses-API output items.

Tracing is switched off: it would otherwise try to export spans to OpenAI.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import platform
from collections.abc import AsyncIterator
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import common
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

set_tracing_disabled(True)


class BenchModel(Model):
    """Replies with the calls `common.next_reply()` asks for; no other work."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        if wait := common.latency():
            await asyncio.sleep(wait)
        calls = common.next_reply()
        output: list[Any]
        if calls is None:
            text = ResponseOutputText(text=common.FINAL_TEXT, type="output_text", annotations=[])
            output = [
                ResponseOutputMessage(
                    id="msg", type="message", role="assistant", content=[text], status="completed"
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    id=c.id,
                    call_id=c.id,
                    type="function_call",
                    name=c.name,
                    arguments=c.arguments_json,
                    status="completed",
                )
                for c in calls
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the benchmarks do not stream")
        yield


class OpenAIAgentsRunner:
    def __init__(self, plan: common.Plan) -> None:
        self.agent = Agent(
            name="bench",
            instructions="You use tools.",
            model=BenchModel(),
            tools=[function_tool(plan.function)],
        )
        self.max_turns = plan.turns + 1

    async def run(self) -> str:
        result = await Runner.run(self.agent, common.PROMPT, max_turns=self.max_turns)
        return str(result.final_output)


class OpenAIAgentsDriver:
    name = "openai-agents"

    def versions(self) -> dict[str, str]:
        return {
            "openai-agents": importlib.metadata.version("openai-agents"),
            "openai": importlib.metadata.version("openai"),
            "python": platform.python_version(),
        }

    def supports(self, plan: common.Plan) -> str | None:
        return None

    def make(self, plan: common.Plan) -> OpenAIAgentsRunner:
        return OpenAIAgentsRunner(plan)


if __name__ == "__main__":
    common.main(OpenAIAgentsDriver())
