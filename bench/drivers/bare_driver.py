"""The floor: a bare asyncio agent loop of about twenty lines, with no guard rails at all.

Messages are plain dicts; the calls of a turn run at once (`gather` with `return_exceptions`),
sync tools in a thread pool as large as steadyloop's. Whatever a framework costs beyond this is
its overhead.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import platform
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import common

Message = dict[str, Any]
THREADS = ThreadPoolExecutor(32)


async def bare_loop(
    model: Callable[[list[Message]], Awaitable[Message]],
    tools: dict[str, Callable[..., Any]],
    prompt: str,
    max_turns: int,
) -> str:
    messages: list[Message] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        reply = await model(messages)
        messages.append(reply)
        if not reply["tool_calls"]:
            return str(reply["content"])
        calls = reply["tool_calls"]
        results = await asyncio.gather(
            *(call_tool(tools, c) for c in calls), return_exceptions=True
        )
        for call, result in zip(calls, results, strict=True):
            text = f"error: {result!r}" if isinstance(result, BaseException) else str(result)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
    raise RuntimeError(f"turn limit reached: {max_turns} model calls")


async def call_tool(tools: dict[str, Callable[..., Any]], call: Message) -> Any:
    fn = tools[call["name"]]
    kwargs = json.loads(call["arguments"])
    if inspect.iscoroutinefunction(fn):
        return await fn(**kwargs)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(THREADS, functools.partial(fn, **kwargs))


async def fake_model(messages: list[Message]) -> Message:
    """Instant replies in the shape of a chat-completions message."""
    if wait := common.latency():
        await asyncio.sleep(wait)
    calls = common.next_reply()
    if calls is None:
        return {"role": "assistant", "content": common.FINAL_TEXT, "tool_calls": []}
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments_json} for c in calls],
    }


class BareRunner:
    def __init__(self, plan: common.Plan) -> None:
        self.tools = {plan.tool: plan.function}
        self.max_turns = plan.turns + 1

    async def run(self) -> str:
        return await bare_loop(fake_model, self.tools, common.PROMPT, self.max_turns)


class BareDriver:
    name = "bare"

    def versions(self) -> dict[str, str]:
        return {"python": platform.python_version()}

    def supports(self, plan: common.Plan) -> str | None:
        return None

    def make(self, plan: common.Plan) -> BareRunner:
        return BareRunner(plan)


if __name__ == "__main__":
    common.main(BareDriver())
