"""pydantic-ai, driven by its own `FunctionModel` replying instantly from the script."""

from __future__ import annotations

import asyncio
import importlib.metadata
import platform

import common
from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits


async def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if wait := common.latency():
        await asyncio.sleep(wait)
    calls = common.next_reply()
    if calls is None:
        return ModelResponse(parts=[TextPart(common.FINAL_TEXT)])
    return ModelResponse(parts=[ToolCallPart(c.name, c.arguments_json, c.id) for c in calls])


class PydanticAIRunner:
    def __init__(self, plan: common.Plan) -> None:
        self.agent = Agent(FunctionModel(reply), tools=[Tool(plan.function, takes_ctx=False)])
        self.limits = UsageLimits(request_limit=plan.turns + 1)

    async def run(self) -> str:
        result = await self.agent.run(common.PROMPT, usage_limits=self.limits)
        return str(result.output)


class PydanticAIDriver:
    name = "pydantic-ai"

    def versions(self) -> dict[str, str]:
        return {
            "pydantic-ai-slim": importlib.metadata.version("pydantic-ai-slim"),
            "pydantic": importlib.metadata.version("pydantic"),
            "python": platform.python_version(),
        }

    def supports(self, plan: common.Plan) -> str | None:
        return None

    def make(self, plan: common.Plan) -> PydanticAIRunner:
        return PydanticAIRunner(plan)


if __name__ == "__main__":
    common.main(PydanticAIDriver())
