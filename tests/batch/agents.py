"""Agents that the batch tests build by name ("batch.agents:make_agent"), as users' factories are.

The fake model asks for two `step` calls, then answers with the prompt in upper case. Each model
call and each tool execution is counted in this process (`MODEL_CALLS`, `STEPS`) and, when
`BATCH_TEST_JOURNAL` names a file, appended to it as a line, so a test can count them across
processes: `model TASK TURN TIME` and `replied TASK TURN`, `start TASK TURN I` and
`end TASK TURN I`. The step whose `TASK TURN I` is `BATCH_TEST_DIE_AT` kills its process, once
(`BATCH_TEST_DIED` is the marker file that says it has). While the file `BATCH_TEST_HOLD` names
exists, every step waits after its `start` line.

`make_gated_agent` asks for the two steps and a gated `wire_money` call in one reply, so each
of its runs pauses for approval; an approved wire is counted in `WIRES` and journaled as
`wire TASK`.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections import Counter
from collections.abc import Sequence

from steadyloop import Agent, AssistantMessage, ToolCall, UserMessage, tool
from steadyloop.messages import Message
from steadyloop.models.base import ModelRequest
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec

MODEL_CALLS: Counter[str] = Counter()
STEPS: Counter[str] = Counter()
BUILT: list[Agent] = []


def journal(line: str) -> None:
    path = os.environ.get("BATCH_TEST_JOURNAL")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


def _sleep() -> float:
    low, high = (float(x) for x in os.environ.get("BATCH_TEST_SLEEP", "0.001,0.005").split(","))
    return random.uniform(low, high)


@tool
async def step(task: str, turn: int, i: int) -> str:
    """Does one step of a task.

    Args:
        task: the task's prompt.
        turn: the model call that asked for this step.
        i: which of the turn's steps.
    """
    key = f"{task} {turn} {i}"
    journal(f"start {key}")
    STEPS[key] += 1
    if os.environ.get("BATCH_TEST_HOLD"):
        await asyncio.to_thread(_wait_while_held)
    await asyncio.sleep(_sleep())
    if os.environ.get("BATCH_TEST_DIE_AT") == key and _first_death():
        os._exit(9)
    journal(f"end {key}")
    return f"step {i} of {task} done"


def _wait_while_held() -> None:
    """Returns once the file `BATCH_TEST_HOLD` names (if any) does not exist."""
    while (hold := os.environ.get("BATCH_TEST_HOLD")) and os.path.exists(hold):
        time.sleep(0.01)


def _first_death() -> bool:
    """True for the first caller only: a marker file is made exclusively."""
    try:
        os.close(os.open(os.environ["BATCH_TEST_DIED"], os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


async def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    prompt = next(m.text for m in messages if isinstance(m, UserMessage))
    turn = sum(isinstance(m, AssistantMessage) for m in messages) + 1
    MODEL_CALLS[prompt] += 1
    journal(f"model {prompt} {turn} {time.time()}")
    await asyncio.sleep(_sleep())
    if prompt.startswith("fail"):
        raise RuntimeError(f"the model cannot answer {prompt}")
    if turn <= int(os.environ.get("BATCH_TEST_TURNS", "2")) - 1:
        calls = tuple(
            ToolCall(f"{prompt}-{turn}-{i}", "step", {"task": prompt, "turn": turn, "i": i})
            for i in range(2)
        )
        reply = AssistantMessage(tool_calls=calls)
    else:
        reply = AssistantMessage(prompt.upper())
    journal(f"replied {prompt} {turn}")
    return reply


def make_agent() -> Agent:
    agent = Agent(FunctionModel(reply), tools=[step])
    BUILT.append(agent)
    return agent


def broken_factory() -> Agent:
    raise RuntimeError("no API key in this environment")


def not_an_agent() -> object:
    return "an agent"


class SettingsModel(FunctionModel):
    """A fake with request settings, as the provider models have: each request notes them."""

    def __init__(self) -> None:
        super().__init__(reply)
        self.settings: dict[str, object] = {}
        self.seen: list[dict[str, object]] = []

    async def request(self, request: ModelRequest) -> AssistantMessage:
        self.seen.append(dict(self.settings))
        return await super().request(request)


def make_agent_with_settings() -> Agent:
    agent = Agent(SettingsModel(), tools=[step])
    BUILT.append(agent)
    return agent


WIRES: Counter[str] = Counter()


@tool(approve=True)
async def wire_money(task: str) -> str:
    """Wires the money a task asks for; a person approves it first.

    Args:
        task: the task's prompt.
    """
    WIRES[task] += 1
    journal(f"wire {task}")
    return f"wired the money of {task}"


async def gated_reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
    """Two `step` calls and a `wire_money` call in the first reply; then the answer."""
    prompt = next(m.text for m in messages if isinstance(m, UserMessage))
    turn = sum(isinstance(m, AssistantMessage) for m in messages) + 1
    MODEL_CALLS[prompt] += 1
    journal(f"model {prompt} {turn} {time.time()}")
    await asyncio.sleep(_sleep())
    if turn > 1:
        return AssistantMessage(f"{prompt} paid")
    steps = tuple(
        ToolCall(f"{prompt}-{turn}-{i}", "step", {"task": prompt, "turn": turn, "i": i})
        for i in range(2)
    )
    return AssistantMessage(tool_calls=(*steps, ToolCall("wire", "wire_money", {"task": prompt})))


def make_gated_agent() -> Agent:
    """An agent whose every run pauses for the approval of its `wire_money` call."""
    agent = Agent(FunctionModel(gated_reply), tools=[step, wire_money])
    BUILT.append(agent)
    return agent
