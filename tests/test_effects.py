"""The effects seam: every model call and every tool call passes through it, in order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from steadyloop import Agent, AssistantMessage, Message, ToolCall, ToolResult, tool
from steadyloop.effects import Effects, ModelCall, ToolInvocation
from steadyloop.events import Event, MessageAdded, ToolCallFinished
from steadyloop.testing import ScriptedModel
from steadyloop.transcript import calls_answered


class Recorder(Effects):
    def __init__(self, name: str, seen: list[str]) -> None:
        self.name = name
        self.seen = seen

    async def model_call(
        self, call: ModelCall, proceed: Callable[[], Awaitable[AssistantMessage]]
    ) -> AssistantMessage:
        self.seen.append(f"{self.name} model {call.turn} {call.model}")
        reply = await proceed()
        self.seen.append(f"{self.name} model {call.turn} done")
        return reply

    async def tool_call(
        self, call: ToolInvocation, proceed: Callable[[], Awaitable[ToolCallFinished]]
    ) -> ToolCallFinished:
        known = "known" if call.tool is not None else "unknown"
        self.seen.append(f"{self.name} tool {call.call.id} {known} turn {call.turn}")
        finished = await proceed()
        self.seen.append(f"{self.name} tool {call.call.id} -> {finished.result.content}")
        return finished


@tool
async def echo(text: str) -> str:
    """Echoes."""
    await asyncio.sleep(0)
    return text


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(
            ToolCall(i, "echo" if i != "x" else "nope", f'{{"text": "{i}"}}') for i in ids
        )
    )


async def test_every_call_goes_through_the_effects_in_call_order_outer_first() -> None:
    seen: list[str] = []
    agent = Agent(
        ScriptedModel([calls("a", "b", "x"), "done"]),
        tools=[echo],
        effects=[Recorder("outer", seen), Recorder("inner", seen)],
    )
    result = await agent.run("go")
    assert result.output == "done"
    starts = [s for s in seen if " tool " in s and "->" not in s]
    assert starts == [
        "outer tool a known turn 1", "inner tool a known turn 1",
        "outer tool b known turn 1", "inner tool b known turn 1",
        "outer tool x unknown turn 1", "inner tool x unknown turn 1",
    ]  # fmt: skip
    assert seen[:2] == ["outer model 1 scripted", "inner model 1 scripted"]
    assert seen[-2:] == ["inner model 2 done", "outer model 2 done"]
    assert "inner tool x -> unknown tool 'nope'; the tools available are: echo" in seen


async def test_an_effect_can_replace_a_result_and_the_model_reads_it() -> None:
    class Redact(Effects):
        async def tool_call(
            self, call: ToolInvocation, proceed: Callable[[], Awaitable[ToolCallFinished]]
        ) -> ToolCallFinished:
            finished = await proceed()
            result = type(finished.result)(finished.result.call_id, finished.result.name, "***")
            return ToolCallFinished(call.call, result, "***", finished.duration, 1)

    model = ScriptedModel([calls("secret"), "done"])
    await Agent(model, tools=[echo], effects=Redact()).run("go")
    (_, second) = model.requests
    assert second.messages[-1].content == "***"  # type: ignore[union-attr]


async def test_an_effect_that_raises_stops_the_run_with_every_call_answered() -> None:
    class Refuse(Effects):
        async def tool_call(
            self, call: ToolInvocation, proceed: Callable[[], Awaitable[ToolCallFinished]]
        ) -> ToolCallFinished:
            if call.call.id == "b":
                raise PermissionError("not allowed")
            return await proceed()

    added: list[Message] = []

    def keep(event: Event) -> None:
        if isinstance(event, MessageAdded):
            added.append(event.message)

    agent = Agent(ScriptedModel([calls("a", "b"), "done"]), tools=[echo], effects=Refuse())
    with pytest.raises(PermissionError):
        await agent.run("go", on_event=keep)
    assert calls_answered(tuple(added))
    answers = {m.call_id: m.content for m in added if isinstance(m, ToolResult)}
    # As with a FatalToolError: the sibling still running is cancelled, and says so.
    assert answers == {
        "a": "cancelled: the run stopped before this call finished",
        "b": "echo stopped the run: PermissionError: not allowed",
    }


async def test_an_effect_sees_the_validated_arguments_or_none_when_the_call_cannot_run() -> None:
    seen: list[tuple[str, object]] = []

    class Look(Effects):
        async def tool_call(
            self, call: ToolInvocation, proceed: Callable[[], Awaitable[ToolCallFinished]]
        ) -> ToolCallFinished:
            seen.append((call.call.id, call.arguments))
            return await proceed()

    turn = AssistantMessage(
        tool_calls=(
            ToolCall("ok", "echo", '{"text": "hi"}'),
            ToolCall("bad", "echo", '{"text": 5}'),
            ToolCall("broken", "echo", '{"text": '),
            ToolCall("x", "nope", "{}"),
        )
    )
    agent = Agent(ScriptedModel([turn, "done"]), tools=[echo], effects=[Look()])
    result = await agent.run("go")
    assert seen == [("ok", {"text": "hi"}), ("bad", None), ("broken", None), ("x", None)]
    errors = [m.content for m in result.messages if isinstance(m, ToolResult) and m.is_error]
    assert errors[0].startswith("invalid arguments for echo")
    assert errors[1].startswith("arguments are not valid JSON")
    assert errors[2].startswith("unknown tool 'nope'")
