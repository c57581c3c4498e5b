"""LangGraph's prebuilt ReAct agent around a langchain-core chat model replying from the script.

The fake chat model is a `BaseChatModel` whose `bind_tools` returns itself, so the graph, the
tool node and langchain's message types do all their usual work.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import platform
import time
import warnings
from typing import Any

import common
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


def _reply() -> AIMessage:
    calls = common.next_reply()
    if calls is None:
        return AIMessage(content=common.FINAL_TEXT)
    return AIMessage(
        content="",
        tool_calls=[
            {"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"} for c in calls
        ],
    )


class BenchChatModel(BaseChatModel):
    """Replies with the calls `common.next_reply()` asks for; no other work."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if wait := common.latency():
            time.sleep(wait)
        return ChatResult(generations=[ChatGeneration(message=_reply())])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if wait := common.latency():
            await asyncio.sleep(wait)
        return ChatResult(generations=[ChatGeneration(message=_reply())])

    @property
    def _llm_type(self) -> str:
        return "bench"

    def bind_tools(self, tools: Any, **kwargs: Any) -> BenchChatModel:  # type: ignore[override]
        return self


class LangGraphRunner:
    def __init__(self, plan: common.Plan) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.graph = create_react_agent(BenchChatModel(), [tool(plan.function)])
        # every turn is two graph steps (model node, tool node)
        self.config = {"recursion_limit": 2 * plan.turns + 5}

    async def run(self) -> str:
        state = await self.graph.ainvoke(
            {"messages": [("user", common.PROMPT)]}, config=self.config
        )
        return str(state["messages"][-1].content)


class LangGraphDriver:
    name = "langgraph"

    def versions(self) -> dict[str, str]:
        return {
            "langgraph": importlib.metadata.version("langgraph"),
            "langchain-core": importlib.metadata.version("langchain-core"),
            "python": platform.python_version(),
        }

    def supports(self, plan: common.Plan) -> str | None:
        return None

    def make(self, plan: common.Plan) -> LangGraphRunner:
        return LangGraphRunner(plan)


if __name__ == "__main__":
    common.main(LangGraphDriver())
