"""What a run keeps alive while it waits on its model: at a thousand runs at once, every object
a waiting run holds is memory and garbage-collector work the process pays for."""

from __future__ import annotations

import asyncio
import gc

from steadyloop import Agent, AssistantMessage, ToolCall, tool
from steadyloop.models.base import Model, ModelRequest

RUNS = 500


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


class GatedModel(Model):
    """Asks for one call to `add`, then answers once `opened` is set."""

    name = "gated"

    def __init__(self, expected: int) -> None:
        self.opened = asyncio.Event()
        self.all_waiting = asyncio.Event()
        self.expected = expected
        self.waiting = 0

    async def request(self, request: ModelRequest) -> AssistantMessage:
        if len(request.messages) == 1:
            return AssistantMessage(
                tool_calls=(ToolCall("c1", "add", '{"a": 1, "b": 2}'),), stop_reason="tool_use"
            )
        self.waiting += 1
        if self.waiting == self.expected:
            self.all_waiting.set()
        await self.opened.wait()
        return AssistantMessage("3")


async def tracked_per_waiting_run(agent: Agent, model: GatedModel) -> float:
    """Objects the garbage collector tracks, per run, for `RUNS` runs waiting on their
    second model call."""
    await agent.run("warm up", history=())  # caches filled, modules imported
    model.opened.clear()
    gc.collect()
    before = len(gc.get_objects())
    tasks = [asyncio.create_task(agent.run("add 1 and 2")) for _ in range(RUNS)]
    await model.all_waiting.wait()
    gc.collect()
    held = (len(gc.get_objects()) - before) / RUNS
    model.opened.set()
    results = await asyncio.gather(*tasks)
    assert {result.output for result in results} == {"3"}
    return held


async def test_a_plain_run_waiting_on_its_model_holds_few_objects() -> None:
    model = GatedModel(expected=RUNS + 1)  # the warm-up run's request counts too
    model.opened.set()
    agent = Agent(model, tools=[tool(add)])
    held = await tracked_per_waiting_run(agent, model)
    # Its task, the frames from `Agent.run` down to the model's (this test's model holds
    # four: its coroutine, the event's, a future and its iterator), its transcript, usage,
    # settings and the waiting call's request: 37.4-37.8 today. One frame more on every
    # run's path, or a per-run context, shows here.
    assert held < 38.5, f"{held:.1f} objects tracked per waiting run"
