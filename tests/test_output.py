"""Typed answers: `output=` makes the model answer through `final_answer`, validated like any
tool's arguments, and `result.output` is the value."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import typing
from collections.abc import Sequence
from typing import Any, Literal, assert_type

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from steadyloop import (
    Agent,
    AssistantMessage,
    ConfigError,
    Limits,
    RepeatLimitExceeded,
    RunResult,
    ToolCall,
    ToolError,
    ToolResult,
    TurnLimitExceeded,
    UserMessage,
    tool,
)
from steadyloop.events import Event, RunFinished
from steadyloop.messages import Message
from steadyloop.testing import FunctionModel, ScriptedModel, TestModel
from steadyloop.tools import ToolSpec
from steadyloop.transcript import calls_answered


class Refund(BaseModel):
    order_id: str
    amount: float = Field(gt=0)
    reason: str


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: int


@tool
def lookup_order(order_id: str) -> str:
    """The order's status and amount."""
    return f"order {order_id}: delivered, 30.00"


def answer(arguments: dict[str, Any] | str, call_id: str = "a") -> AssistantMessage:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return AssistantMessage(tool_calls=(ToolCall(call_id, "final_answer", text),))


REFUND = {"order_id": "A1", "amount": 30, "reason": "late"}


async def test_the_answer_is_a_validated_value_and_text_is_the_last_reply() -> None:
    model = ScriptedModel(
        [
            AssistantMessage(
                "Let me look.", (ToolCall("1", "lookup_order", '{"order_id": "A1"}'),)
            ),
            AssistantMessage("Here it is.", answer(REFUND).tool_calls),
        ]
    )
    agent = Agent(model, tools=[lookup_order], output=Refund)
    result = await agent.run("Refund A1")
    assert_type(result, RunResult[Refund])
    assert result.output == Refund(order_id="A1", amount=30.0, reason="late")
    assert result.text == "Here it is."
    assert result.stop_reason == "end_turn"
    # The accepted call has a normal result: the transcript is a valid history to go on from.
    last = result.messages[-1]
    assert isinstance(last, ToolResult)
    assert not last.is_error
    assert last.name == "final_answer"
    assert calls_answered(result.messages)


async def test_the_answer_tool_schema_is_the_types_fields_and_text_runs_have_none() -> None:
    model = ScriptedModel([answer(REFUND)])
    await Agent(model, output=Refund).run("go")
    (spec,) = model.requests[0].tools
    assert spec.name == "final_answer"
    assert spec.parameters["required"] == ["order_id", "amount", "reason"]
    assert spec.parameters["properties"]["amount"] == {"type": "number", "exclusiveMinimum": 0}
    plain = ScriptedModel(["hi"])
    result = await Agent(plain).run("go")
    assert_type(result, RunResult[str])
    assert plain.requests[0].tools == ()
    assert result.output == "hi" == result.text


async def test_a_bad_answer_gets_field_errors_like_any_tool_and_the_run_goes_on() -> None:
    @tool
    def refund(order_id: str, amount: float) -> str:
        """Refunds."""
        return "ok"

    bad = {"order_id": 7, "amount": -1, "extra": True}
    model = ScriptedModel([answer(bad, "1"), answer(REFUND, "2")])
    result = await Agent(model, output=Refund).run("go")
    assert result.output.order_id == "A1"
    error = result.messages[2]
    assert isinstance(error, ToolResult)
    assert error.is_error
    assert error.content == (
        "invalid arguments for final_answer:\n"
        "- order_id: Input should be a valid string (given: 7)\n"
        "- amount: Input should be greater than 0 (given: -1)\n"
        "- reason: required, but not given"
    )
    # a tool's error for the same mistake reads the same way
    tool_model = ScriptedModel(
        [AssistantMessage(tool_calls=(ToolCall("1", "refund", '{"order_id": 7}'),)), "done"]
    )
    tool_run = await Agent(tool_model, tools=[refund]).run("go")
    assert "- order_id: Input should be a valid string (given: 7)" in str(tool_run.messages[2])


async def test_a_text_reply_gets_a_visible_instruction_appended_after_it() -> None:
    model = ScriptedModel(["It is a refund of 30.", answer(REFUND)])
    result = await Agent(model, output=Refund).run("go")
    assert isinstance(result.output, Refund)
    reply, nudge = result.messages[1], result.messages[2]
    assert isinstance(reply, AssistantMessage)
    assert reply.text == "It is a refund of 30."
    assert isinstance(nudge, UserMessage)
    assert "final_answer" in nudge.text
    assert model.requests[1].messages[-1] == nudge  # the model reads it
    assert result.text == ""  # the last reply was the call


async def test_final_answer_beside_other_calls_is_refused_while_they_run() -> None:
    ran: list[str] = []

    @tool
    def lookup(order_id: str) -> str:
        """Looks an order up."""
        ran.append(order_id)
        return "found"

    crowded = AssistantMessage(
        tool_calls=(
            ToolCall("1", "final_answer", json.dumps(REFUND)),
            ToolCall("2", "lookup", '{"order_id": "A1"}'),
        )
    )
    model = ScriptedModel([crowded, answer(REFUND, "3")])
    result = await Agent(model, tools=[lookup], output=Refund).run("go")
    assert ran == ["A1"]
    refused, looked_up = result.messages[2], result.messages[3]
    assert isinstance(refused, ToolResult)
    assert refused.is_error
    assert "call it alone, once you have the other results" in refused.content
    assert isinstance(looked_up, ToolResult)
    assert looked_up.content == "found"
    assert result.output.order_id == "A1"
    assert calls_answered(result.messages)


@pytest.mark.parametrize(
    ("output", "arguments", "expected"),
    [
        (int, {"value": 3}, 3),
        (list[str], {"value": ["a", "b"]}, ["a", "b"]),
        (Literal["yes", "no"], {"value": "no"}, "no"),
        (dict[str, int], {"value": {"a": 1}}, {"a": 1}),
        (Point, {"x": 1, "y": 2}, Point(1, 2)),
        (Person, {"name": "Ada", "age": 36}, {"name": "Ada", "age": 36}),
    ],
)
async def test_non_object_types_are_wrapped_as_value(
    output: Any, arguments: dict[str, Any], expected: Any
) -> None:
    model = ScriptedModel([answer(arguments)])
    result = await Agent(model).run("go", output=output)
    assert result.output == expected
    (spec,) = model.requests[0].tools
    assert sorted(spec.parameters["properties"]) == sorted(arguments)
    assert spec.parameters["type"] == "object"


async def test_a_wrapped_value_that_is_wrong_names_the_value_field() -> None:
    model = ScriptedModel([answer({"value": "many"}), answer({"value": 4})])
    result = await Agent(model, output=int).run("go")
    assert result.output == 4
    error = result.messages[2]
    assert isinstance(error, ToolResult)
    assert error.content.startswith("invalid arguments for final_answer:\n- value: ")


async def test_output_check_returns_the_output_or_sends_text_back() -> None:
    seen: list[Refund] = []

    def check(refund: Refund) -> Refund:
        seen.append(refund)
        if refund.amount > 100:
            raise ToolError("refunds over 100 need a manager: lower the amount or say why not")
        return refund.model_copy(update={"reason": refund.reason.upper()})

    too_much = {**REFUND, "amount": 500}
    model = ScriptedModel([answer(too_much, "1"), answer(REFUND, "2")])
    result = await Agent(model, output=Refund, output_check=check).run("go")
    assert result.output.reason == "LATE"
    rejected = result.messages[2]
    assert isinstance(rejected, ToolResult)
    assert rejected.is_error
    assert rejected.content == "refunds over 100 need a manager: lower the amount or say why not"
    assert [r.amount for r in seen] == [500, 30]


async def test_an_async_output_check_is_awaited() -> None:
    async def check(value: int) -> int:
        await asyncio.sleep(0)
        return value * 10

    result = await Agent(ScriptedModel([answer({"value": 4})]), output=int, output_check=check).run(
        "go"
    )
    assert result.output == 40


@pytest.mark.parametrize("is_async", [False, True], ids=["sync check", "async check"])
async def test_output_check_without_output_checks_the_text_answer(is_async: bool) -> None:
    seen: list[str] = []

    def no_internal_urls(text: str) -> str:
        seen.append(text)
        if "intranet." in text:
            raise ToolError("do not share internal URLs")
        return text.replace("example.com", "EXAMPLE.COM")

    async def checked_async(text: str) -> str:
        return no_internal_urls(text)

    model = ScriptedModel(["See http://intranet.example/refunds", "Use example.com/refunds."])
    check = checked_async if is_async else no_internal_urls
    result = await Agent(model, output_check=check).run("How do I get a refund?")
    assert seen == ["See http://intranet.example/refunds", "Use example.com/refunds."]
    assert result.output == "Use EXAMPLE.COM/refunds."
    assert result.text == "Use example.com/refunds."
    refusal = result.messages[2]
    assert isinstance(refusal, UserMessage)
    assert refusal.text == "Your answer was not accepted: do not share internal URLs"
    assert model.requests[1].messages[-1] == refusal  # the model read why


async def test_a_text_answer_refused_until_the_limit_has_no_output() -> None:
    def never(text: str) -> str:
        raise ToolError("no")

    model = ScriptedModel(["one", "two"])
    with pytest.raises(TurnLimitExceeded) as stopped:
        await Agent(model, output_check=never, limits=Limits(max_turns=2)).run("go")
    assert stopped.value.result.output is None
    assert stopped.value.result.text == "two"


class Line(typing.TypedDict):
    sku: str


class Order(typing.TypedDict, total=False):
    order_id: typing.Required[str]
    lines: list[Line]
    note: str


def test_a_typing_typeddict_is_an_answer_type_on_every_supported_python() -> None:
    model = ScriptedModel([answer({"order_id": "A1", "lines": [{"sku": "k"}]})])
    result = Agent(model, output=Order).run_sync("go")
    assert result.output == {"order_id": "A1", "lines": [{"sku": "k"}]}
    bad = ScriptedModel([answer({"lines": [{"sku": 3}]}), answer({"order_id": "A2"})])
    again = Agent(bad, output=Order).run_sync("go")
    assert again.output == {"order_id": "A2"}
    refused = again.messages[2]
    assert isinstance(refused, ToolResult)
    assert "order_id: required" in refused.content
    assert "lines.0.sku" in refused.content


async def test_bad_answers_are_bounded_by_the_repeat_guard() -> None:
    model = ScriptedModel([answer({"value": "x"}, str(i)) for i in range(5)])
    with pytest.raises(RepeatLimitExceeded) as stopped:
        await Agent(model, output=int, limits=Limits(max_repeats=3)).run("go")
    assert len(model.requests) == 3
    assert stopped.value.result.output is None


async def test_a_limit_leaves_output_none_for_typed_runs_and_the_text_for_str() -> None:
    with pytest.raises(TurnLimitExceeded) as typed:
        await Agent(ScriptedModel(["a", "b"]), output=Refund, limits=Limits(max_turns=2)).run("x")
    assert typed.value.result.output is None
    assert typed.value.result.text == "b"
    loop = AssistantMessage(tool_calls=(ToolCall("1", "lookup_order", '{"order_id": "1"}'),))
    with pytest.raises(TurnLimitExceeded) as text:
        await Agent(ScriptedModel([loop]), tools=[lookup_order], limits=Limits(max_turns=1)).run(
            "x"
        )
    assert text.value.result.output == ""


async def test_the_run_output_overrides_the_agents() -> None:
    agent = Agent(ScriptedModel([answer({"value": 2}), answer(REFUND)]), output=Refund)
    number = await agent.run("go", output=int)
    assert_type(number, RunResult[int])
    assert number.output == 2
    refund = await agent.run("go")
    assert isinstance(refund.output, Refund)


def test_run_sync_and_stream_take_output() -> None:
    agent = Agent(ScriptedModel([answer({"value": 1.5}), answer({"value": True})]))
    result = agent.run_sync("go", output=float)
    assert_type(result, RunResult[float])
    assert result.output == 1.5

    async def streamed() -> list[Event]:
        return [event async for event in agent.stream("go", output=bool)]

    last = asyncio.run(streamed())[-1]
    assert isinstance(last, RunFinished)
    assert last.result.output is True


async def test_test_model_calls_the_tools_then_answers_with_valid_arguments() -> None:
    model = TestModel()
    result = await Agent(model, tools=[lookup_order], output=Refund).run("Refund A1")
    assert isinstance(result.output, Refund)
    first, second = (m for m in result.messages if isinstance(m, AssistantMessage) and m.tool_calls)
    assert [c.name for c in first.tool_calls] == ["lookup_order"]
    assert [c.name for c in second.tool_calls] == ["final_answer"]
    alone = await Agent(TestModel(), output=list[int]).run("go")
    assert alone.output == []


def test_a_tool_named_final_answer_beside_output_is_a_config_error() -> None:
    @tool
    def final_answer(text: str) -> str:
        """Says it."""
        return text

    with pytest.raises(ConfigError, match="rename the tool"):
        Agent(ScriptedModel([]), tools=[final_answer], output=Refund)
    agent = Agent(ScriptedModel(["x"]), tools=[final_answer])  # a text run: the name is free
    with pytest.raises(ConfigError, match="rename the tool"):
        agent.run_sync("go", output=int)


def test_a_type_pydantic_cannot_describe_is_a_one_line_config_error() -> None:
    class Opaque:
        pass

    with pytest.raises(ConfigError) as error:
        Agent(ScriptedModel([]), output=Opaque)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("output=Opaque: pydantic cannot build a schema for it")
    assert "use a pydantic model, a dataclass, a TypedDict" in message


async def test_the_same_mechanism_works_with_a_function_model_that_reads_the_tools() -> None:
    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        (spec,) = tools
        assert spec.name == "final_answer"
        if isinstance(messages[-1], ToolResult):
            raise AssertionError("the run should have ended at the accepted answer")
        return answer({"value": "ok"})

    result = await Agent(FunctionModel(reply)).run("go", output=str | None)
    assert result.output == "ok"
