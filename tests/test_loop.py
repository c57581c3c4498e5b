"""The agent loop driven by the shipped fake models."""

from __future__ import annotations

import asyncio
import datetime
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from steadyloop import (
    Agent,
    AssistantMessage,
    ConfigError,
    ContextLimitExceeded,
    ContextWindowExceeded,
    FatalToolError,
    Limits,
    ModelError,
    RepeatLimitExceeded,
    ToolCall,
    ToolError,
    ToolResult,
    TurnLimitExceeded,
    Usage,
    UserMessage,
)
from steadyloop.events import (
    Event,
    LimitReached,
    MessageAdded,
    ModelRequestStarted,
    ModelRetry,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from steadyloop.media import Image
from steadyloop.messages import Message
from steadyloop.output import EMPTY_REPLY_TEXT
from steadyloop.retry import Backoff
from steadyloop.testing import FunctionModel, ScriptedModel, TestModel
from steadyloop.tools import ToolSpec
from steadyloop.transcript import calls_answered


def get_weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: the city name.
    """
    return f"sunny in {city}"


def fail_always(x: int = 0) -> str:
    """Always fails the same way."""
    raise ToolError("the service is down for maintenance")


def calls(*items: tuple[Any, ...]) -> AssistantMessage:
    """A reply calling (name, arguments[, id]) for each item; ids default to c0, c1, ..."""
    made = tuple(
        ToolCall(item[2] if len(item) == 3 else f"c{i}", item[0], item[1])
        for i, item in enumerate(items)
    )
    return AssistantMessage(tool_calls=made, stop_reason="tool_use")


def agent(model: Any, *tools: Any, **options: Any) -> Agent:
    options.setdefault("backoff", Backoff.none())
    return Agent(model, tools=tools, **options)


async def collect(stream: AsyncIterator[Event], into: list[Event]) -> None:
    async for event in stream:
        into.append(event)


def results(messages: Sequence[Message]) -> list[ToolResult]:
    return [m for m in messages if isinstance(m, ToolResult)]


# -- the loop -----------------------------------------------------------------------------------


async def test_model_tool_model_until_an_answer() -> None:
    model = ScriptedModel(
        [calls(("get_weather", '{"city": "Oslo"}')), AssistantMessage("It is sunny.")]
    )
    result = await agent(model, get_weather, instructions="Be brief.").run("Weather in Oslo?")
    assert result.output == "It is sunny."
    assert result.stop_reason == "end_turn"
    assert result.messages == (
        UserMessage("Weather in Oslo?"),
        calls(("get_weather", '{"city": "Oslo"}')),
        ToolResult("c0", "get_weather", "sunny in Oslo"),
        AssistantMessage("It is sunny."),
    )
    first, second = model.requests
    assert first.instructions == "Be brief."
    assert first.messages == (UserMessage("Weather in Oslo?"),)
    assert [t.name for t in first.tools] == ["get_weather"]
    assert second.messages == result.messages[:3]
    assert result.run_id is None


async def test_an_answer_without_tool_calls_ends_the_run_at_once() -> None:
    model = ScriptedModel(["Hello!"])
    result = await agent(model, get_weather).run("hi")
    assert result.output == "Hello!"
    assert len(model.requests) == 1


async def test_function_model_sees_the_view_and_the_tool_specs() -> None:
    seen: list[tuple[tuple[Message, ...], tuple[ToolSpec, ...]]] = []

    async def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        seen.append((tuple(messages), tuple(tools)))
        if isinstance(messages[-1], ToolResult):
            return AssistantMessage(f"done: {messages[-1].content}")
        return calls(("get_weather", '{"city": "Rome"}'))

    result = await agent(FunctionModel(decide), get_weather, instructions="sys").run("go")
    assert result.output == "done: sunny in Rome"
    assert [len(m) for m, _ in seen] == [1, 3]
    assert all(not isinstance(m, str) for m in seen[0][0])
    spec = seen[0][1][0]
    assert spec.name == "get_weather"
    assert spec.parameters["properties"]["city"]["description"] == "the city name."


async def test_test_model_calls_every_tool_once_then_answers() -> None:
    def add(a: int, b: int = 2) -> int:
        """Adds."""
        return a + b

    result = await agent(TestModel(), get_weather, add).run("try everything")
    done = results(result.messages)
    assert [r.name for r in done] == ["get_weather", "add"]
    assert [r.content for r in done] == ["sunny in example", "3"]
    assert not any(r.is_error for r in done)
    assert "Ran 2 tool call(s)" in result.output
    assert result.stop_reason == "end_turn"


class Filter(BaseModel):
    tags: Annotated[list[str], Field(min_length=1)]
    since: datetime.date


def constrained(
    code: Annotated[str, Field(max_length=2)],
    name: Annotated[str, Field(min_length=10)],
    offset: Annotated[int, Field(le=0)],
    index: Annotated[int, Field(ge=1, lt=2)],
    big: Annotated[int, Field(gt=10)],
    ratio: Annotated[float, Field(gt=0, lt=1)],
    ids: Annotated[list[int], Field(min_length=2)],
    mode: Literal["fast", "exact"],
    maybe: int | None,
    filter: Filter,
) -> str:
    """Many constraints."""
    return "valid"


def temporal(
    when: datetime.date,
    at: datetime.datetime,
    clock: datetime.time,
    wait: datetime.timedelta,
    key: uuid.UUID,
) -> str:
    """Dates, times and ids."""
    return "valid"


async def test_test_model_arguments_pass_validation_of_ordinary_tools() -> None:
    result = await agent(TestModel(), constrained, temporal).run("try")
    assert [(r.name, r.content) for r in results(result.messages)] == [
        ("constrained", "valid"),
        ("temporal", "valid"),
    ]


def test_run_sync_runs_without_an_event_loop() -> None:
    result = agent(TestModel()).run_sync("hello")
    assert result.output == "(test model) You said: hello"


async def test_run_sync_inside_a_running_loop_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="await run"):
        agent(TestModel()).run_sync("hello")


async def test_agent_spec_string_test_is_the_offline_model() -> None:
    result = await Agent("test").run("ping")
    assert result.output == "(test model) You said: ping"


async def test_errors_are_results_the_model_reads_and_the_run_goes_on() -> None:
    model = ScriptedModel(
        [
            calls(
                ("get_weather", '{"city": "Oslo"}'),
                ("made_up", "{}"),
                ("get_weather", '{"town": "x"}'),
                ("get_weather", '{"city": '),
            ),
            AssistantMessage("recovered"),
        ]
    )
    result = await agent(model, get_weather).run("go")
    assert result.output == "recovered"
    assert [r.is_error for r in results(result.messages)] == [False, True, True, True]
    assert calls_answered(result.messages)


async def test_duplicate_and_empty_ids_are_made_unique_in_the_transcript() -> None:
    model = ScriptedModel(
        [
            calls(
                ("get_weather", '{"city": "A"}', "same"),
                ("get_weather", '{"city": "B"}', "same"),
                ("get_weather", '{"city": "C"}', ""),
                ("get_weather", '{"city": "D"}', ""),
            ),
            calls(("get_weather", '{"city": "E"}', "same")),
            "done",
        ]
    )
    result = await agent(model, get_weather).run("go")
    ids = [c.id for m in result.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert len(set(ids)) == 5
    assert all(ids)
    assert ids[0] == "same"
    assert [r.content[-1] for r in results(result.messages)] == ["A", "B", "C", "D", "E"]
    assert calls_answered(result.messages)


# -- cut-off calls ------------------------------------------------------------------------------


async def test_calls_cut_off_by_the_output_limit_are_never_run() -> None:
    ran: list[str] = []

    def write_file(path: str, text: str) -> str:
        ran.append(path)
        return "written"

    cut = AssistantMessage(
        tool_calls=(ToolCall("c1", "write_file", '{"path": "a.txt", "text": "very lo'),),
        stop_reason="max_tokens",
    )
    model = ScriptedModel([cut, "I will write less."])
    result = await agent(model, write_file).run("write it")
    assert ran == []
    (answer,) = results(result.messages)
    assert answer.is_error
    assert answer.call_id == "c1"
    assert "cut off" in answer.content
    assert "write_file" in answer.content
    assert result.output == "I will write less."
    assert calls_answered(result.messages)


async def test_a_text_reply_cut_off_says_so_in_the_stop_reason() -> None:
    model = ScriptedModel([AssistantMessage("The answer is", stop_reason="max_tokens")])
    result = await agent(model).run("go")
    assert result.stop_reason == "max_tokens"
    assert result.output == "The answer is"


# -- limits -------------------------------------------------------------------------------------


async def test_turn_limit_stops_before_the_next_model_call_with_the_partial_result() -> None:
    model = FunctionModel(lambda messages, tools: calls(("get_weather", '{"city": "Oslo"}')))
    run = agent(model, get_weather, limits=Limits(max_turns=3))
    with pytest.raises(TurnLimitExceeded) as info:
        await run.run("loop forever")
    assert len(model.requests) == 3
    partial = info.value.result
    assert info.value.reason == "turn_limit"
    assert partial.stop_reason == "turn_limit"
    assert len(results(partial.messages)) == 3
    assert calls_answered(partial.messages)
    assert partial.usage.requests == 3
    assert partial.usage.tool_calls == 3
    assert "3" in str(info.value)


async def test_history_does_not_count_toward_the_turn_limit() -> None:
    first = await agent(ScriptedModel(["one"])).run("a")
    second = await agent(ScriptedModel(["two"]), limits=Limits(max_turns=1)).run(
        "b", history=first.messages
    )
    assert second.output == "two"


async def test_a_request_over_the_context_limit_is_never_sent() -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ContextLimitExceeded) as info:
        await agent(model, limits=Limits(max_context_tokens=100)).run("x" * 2_000)
    assert model.requests == []
    assert info.value.reason == "context_limit"
    assert info.value.result.stop_reason == "context_limit"
    assert info.value.result.messages == (UserMessage("x" * 2_000),)


async def test_the_provider_count_plus_what_was_added_is_checked_before_each_call() -> None:
    def big() -> str:
        return "y" * 2_000  # about 500 tokens by the default estimate

    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(ToolCall("c1", "big", "{}"),),
                usage=Usage(input_tokens=700, output_tokens=20),
            ),
            "never sent",
        ]
    )
    with pytest.raises(ContextLimitExceeded) as info:
        await agent(model, big, limits=Limits(max_context_tokens=1_000)).run("go")
    assert len(model.requests) == 1
    partial = info.value.result
    assert isinstance(partial.messages[-1], ToolResult)
    assert calls_answered(partial.messages)


async def test_under_the_limit_the_run_goes_on() -> None:
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(ToolCall("c1", "get_weather", '{"city": "a"}'),),
                usage=Usage(input_tokens=700, output_tokens=20),
            ),
            "fine",
        ]
    )
    result = await agent(model, get_weather, limits=Limits(max_context_tokens=1_000)).run("go")
    assert result.output == "fine"


async def test_a_custom_estimator_is_used() -> None:
    model = ScriptedModel(["never"])
    run = agent(model, limits=Limits(max_context_tokens=1_000), estimate_tokens=lambda m: 5_000)
    with pytest.raises(ContextLimitExceeded):
        await run.run("short")
    assert model.requests == []


async def test_the_provider_saying_too_long_without_compaction_is_a_context_limit() -> None:
    error = ContextWindowExceeded("prompt is too long: 250000 tokens > 200000", limit=200_000)
    model = ScriptedModel([error])
    with pytest.raises(ContextLimitExceeded) as info:
        await agent(model).run("go")
    assert info.value.__cause__ is error
    assert "prompt is too long" in str(info.value)
    assert len(model.requests) == 1


async def test_repeat_guard_stops_the_same_failure_in_a_row() -> None:
    model = FunctionModel(lambda messages, tools: calls(("fail_always", '{"x": 1}')))
    with pytest.raises(RepeatLimitExceeded) as info:
        await agent(model, fail_always, limits=Limits(max_repeats=3)).run("go")
    assert len(model.requests) == 3
    assert info.value.reason == "repeat_limit"
    partial = info.value.result
    assert partial.stop_reason == "repeat_limit"
    assert len(results(partial.messages)) == 3
    assert calls_answered(partial.messages)
    assert "fail_always" in str(info.value)


async def test_repeat_guard_ignores_changed_arguments_and_successes_in_between() -> None:
    turn = 0

    def vary(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        nonlocal turn
        turn += 1
        if turn > 6:
            return AssistantMessage("gave up")
        if turn % 3 == 0:
            return calls(("get_weather", '{"city": "x"}'))
        return calls(("fail_always", f'{{"x": {turn}}}' if turn < 3 else '{"x": 9}'))

    result = await agent(FunctionModel(vary), fail_always, get_weather).run("go")
    assert result.output == "gave up"


async def test_repeat_guard_treats_equal_json_as_the_same_call() -> None:
    replies: list[AssistantMessage | str] = [
        calls(("fail_always", '{"x": 1}')),
        calls(("fail_always", '{ "x" : 1 }')),
        calls(("fail_always", {"x": 1})),
        "never",
    ]
    with pytest.raises(RepeatLimitExceeded):
        await agent(ScriptedModel(replies), fail_always).run("go")


async def test_the_same_unknown_tool_over_and_over_stops_with_a_typed_error() -> None:
    model = FunctionModel(lambda messages, tools: calls(("get_wether", '{"city": "Oslo"}')))
    with pytest.raises(RepeatLimitExceeded) as info:
        await agent(model, get_weather).run("go")
    assert len(model.requests) == 3
    last = info.value.result.messages[-1]
    assert isinstance(last, ToolResult)
    assert "unknown tool 'get_wether'" in last.content


async def test_the_same_successful_call_is_answered_you_have_it_then_stops_the_run() -> None:
    model = FunctionModel(lambda messages, tools: calls(("get_weather", '{"city": "Oslo"}')))
    with pytest.raises(RepeatLimitExceeded) as info:
        await agent(model, get_weather).run("go")
    assert len(model.requests) == 4  # three answered, the third with the warning; one more
    answers = results(info.value.result.messages)
    assert [a.is_error for a in answers] == [False, False, True, True]
    assert answers[0].content == "sunny in Oslo"
    assert answers[2].content.startswith("you already have this result: get_weather")
    assert model.requests[3].messages[-1] == answers[2]  # the model read the warning
    assert info.value.result.stop_reason == "repeat_limit"
    assert calls_answered(info.value.result.messages)
    assert "returned the same result" in str(info.value)


async def test_a_call_whose_result_changes_or_the_guard_switched_off_is_never_refused() -> None:
    polls = 0

    def job_status() -> str:
        """Status of the export job."""
        nonlocal polls
        polls += 1
        return "running" if polls < 6 else "done"

    def poll(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        last = messages[-1]
        if isinstance(last, ToolResult) and last.content == "done":
            return AssistantMessage("exported")
        return calls(("job_status", "{}"))

    with pytest.raises(RepeatLimitExceeded):  # "running" five times in a row
        await agent(FunctionModel(poll), job_status).run("go")
    polls = 0
    result = await agent(FunctionModel(poll), job_status, limits=Limits(max_same_results=None)).run(
        "go"
    )
    assert result.output == "exported"
    assert not any(a.is_error for a in results(result.messages))


async def test_parallel_calls_repeated_each_turn_are_each_counted() -> None:
    def both(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        return calls(("get_weather", '{"city": "Oslo"}'), ("fail_always", '{"x": 1}'))

    with pytest.raises(RepeatLimitExceeded) as info:
        await agent(FunctionModel(both), get_weather, fail_always).run("go")
    # the failing call stops the run at its third turn, whatever succeeds beside it
    assert info.value.result.usage.requests == 3
    assert "fail_always failed the same way 3 times" in str(info.value)


@pytest.mark.parametrize(
    "limits",
    [
        {"max_turns": 0},
        {"max_context_tokens": -1},
        {"max_repeats": 0},
        {"max_turns": None},
        {"max_turns": 2.5},
        {"max_turns": True},
    ],
)
def test_limits_must_be_positive_ints(limits: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="positive int"):
        Limits(**limits)


@pytest.mark.parametrize("same", [0, 1, True, 2.5])
def test_max_same_results_counts_the_first_result_so_it_is_at_least_two(same: Any) -> None:
    with pytest.raises(ConfigError, match=r"at least 2 or None.*the first result always reaches"):
        Limits(max_same_results=same)


async def test_the_first_result_of_a_call_reaches_the_model_at_the_smallest_limit() -> None:
    model = ScriptedModel(
        [AssistantMessage(tool_calls=(ToolCall("a", "get_weather", '{"city": "x"}'),))] * 3
    )
    with pytest.raises(RepeatLimitExceeded) as stopped:
        await agent(model, get_weather, limits=Limits(max_same_results=2)).run("weather?")
    results = [m for m in stopped.value.result.messages if isinstance(m, ToolResult)]
    assert [r.content.startswith("you already have") for r in results] == [False, True, True]


def _run(tmp: Path, prompt: Any = "x", **options: Any) -> Any:
    agent: Any = Agent(ScriptedModel(["ok"]), store=tmp / "runs.db")
    return agent.run_sync(prompt, **options)


def _untyped(made: Any) -> Any:
    """`made` without its type, to call it with what the annotations forbid."""
    return made


@pytest.mark.parametrize(
    ("call", "says"),
    [
        pytest.param(lambda tmp: _run(tmp, run_id=123), "run_id must be a str, got int", id="id"),
        pytest.param(lambda tmp: _run(tmp, None), "the prompt must be a str", id="None"),
        pytest.param(lambda tmp: _run(tmp, b"hi"), "got bytes: pass the text", id="bytes"),
        pytest.param(
            lambda tmp: _untyped(Image).from_bytes("str"),
            "Image.from_bytes needs the image's bytes, got str",
            id="image from text",
        ),
        pytest.param(
            lambda tmp: _untyped(ScriptedModel)([{"text": "hi"}]),
            "ScriptedModel reply 0 is a dict",
            id="scripted dict",
        ),
        pytest.param(
            lambda tmp: _untyped(Agent)("test", instructions=lambda: "hi"),
            "define them as fn(ctx: RunContext) -> str",
            id="instructions without ctx",
        ),
        pytest.param(
            lambda tmp: _untyped(Agent)("test", instructions=42),
            "instructions must be a str or fn",
            id="instructions number",
        ),
        pytest.param(lambda tmp: _run(tmp, if_exists="bogus"), "if_exists must be", id="if_exists"),
    ],
)
def test_bad_api_input_is_a_config_error_saying_what_to_pass(
    tmp_path: Path, call: Callable[[Path], Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)) as error:
        call(tmp_path)
    assert "\n" not in str(error.value)


def test_limits_defaults() -> None:
    assert Limits() == Limits(max_turns=20, max_context_tokens=150_000, max_repeats=3)


# -- usage --------------------------------------------------------------------------------------


async def test_usage_is_summed_over_the_run() -> None:
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall("a", "get_weather", '{"city": "x"}'),
                    ToolCall("b", "nope", "{}"),
                ),
                usage=Usage(100, 10, cache_read_tokens=50),
            ),
            AssistantMessage(
                tool_calls=(ToolCall("c", "get_weather", "{bad"),), usage=Usage(150, 5)
            ),
            AssistantMessage("done", usage=Usage(200, 7, cache_write_tokens=3)),
        ]
    )
    result = await agent(model, get_weather).run("go")
    assert result.usage == Usage(
        input_tokens=450,
        output_tokens=22,
        requests=3,
        tool_calls=3,
        cache_read_tokens=50,
        cache_write_tokens=3,
    )


async def test_replies_without_usage_count_as_requests_with_unknown_tokens() -> None:
    result = await agent(ScriptedModel(["ok"])).run("go")
    assert result.usage == Usage(requests=1, unreported=1)
    assert result.usage.total_tokens is None
    assert not result.usage.tokens_known


async def test_tokens_are_a_floor_when_only_some_replies_report_them() -> None:
    call = ToolCall("c1", "get_weather", {"city": "Oslo"})
    model = ScriptedModel([AssistantMessage(tool_calls=(call,), usage=Usage(100, 5)), "done"])
    result = await agent(model, get_weather).run("go")
    assert (result.usage.requests, result.usage.unreported) == (2, 1)
    assert result.usage.total_tokens == 105
    assert not result.usage.tokens_known


# -- empty replies ------------------------------------------------------------------------------


async def test_an_empty_reply_is_no_answer_the_model_is_told_and_asked_again() -> None:
    model = ScriptedModel(["", "  \n", "Oslo is sunny"])
    result = await agent(model).run("weather?")
    assert result.output == "Oslo is sunny"
    assert result.usage.requests == 3
    nudges = [m for m in result.messages if isinstance(m, UserMessage)][1:]
    assert [n.text for n in nudges] == [EMPTY_REPLY_TEXT, EMPTY_REPLY_TEXT]
    assert model.requests[1].messages[-1] == nudges[0]  # the model reads it


async def test_a_model_that_keeps_replying_empty_stops_at_the_turn_limit() -> None:
    with pytest.raises(TurnLimitExceeded) as stopped:
        await agent(ScriptedModel([""] * 5), limits=Limits(max_turns=3)).run("go")
    assert stopped.value.result.stop_reason == "turn_limit"
    assert stopped.value.result.output == ""


async def test_an_empty_reply_cut_off_by_the_output_limit_ends_the_run_as_max_tokens() -> None:
    cut = AssistantMessage("", stop_reason="max_tokens")
    result = await agent(ScriptedModel([cut])).run("go")
    assert result.stop_reason == "max_tokens"
    assert result.usage.requests == 1


# -- model errors -------------------------------------------------------------------------------


async def test_retryable_model_errors_are_retried_then_the_run_goes_on() -> None:
    model = ScriptedModel(
        [
            ModelError("503 overloaded", retryable=True, status=503),
            ModelError("429 slow down", retryable=True, status=429, retry_after=0.0),
            "finally",
        ]
    )
    result = await agent(model, model_retries=2).run("go")
    assert result.output == "finally"
    assert len(model.requests) == 3
    assert result.usage.requests == 1


async def test_a_providers_retry_after_sets_the_wait() -> None:
    model = ScriptedModel([ModelError("429", retryable=True, retry_after=0.2), "ok"])
    started = time.monotonic()
    result = await agent(model, model_retries=1).run("go")
    assert result.output == "ok"
    assert time.monotonic() - started >= 0.19


async def test_retryable_model_errors_are_raised_once_retries_run_out() -> None:
    errors = [ModelError(f"503 #{i}", retryable=True) for i in range(3)]
    model = ScriptedModel([*errors, "too late"])
    with pytest.raises(ModelError, match="503 #2"):
        await agent(model, model_retries=2).run("go")
    assert len(model.requests) == 3


async def test_non_retryable_model_errors_are_raised_at_once() -> None:
    model = ScriptedModel([ModelError("400 bad request", retryable=False), "never"])
    with pytest.raises(ModelError, match="400"):
        await agent(model, model_retries=5).run("go")
    assert len(model.requests) == 1


async def test_model_retries_zero_means_one_attempt() -> None:
    model = ScriptedModel([ModelError("503", retryable=True), "never"])
    with pytest.raises(ModelError):
        await agent(model, model_retries=0).run("go")
    assert len(model.requests) == 1


# -- history ------------------------------------------------------------------------------------


async def test_history_continues_a_conversation() -> None:
    first = await agent(
        ScriptedModel([calls(("get_weather", '{"city": "Oslo"}')), "sunny"]), get_weather
    ).run("weather?")
    model = ScriptedModel(["you asked about Oslo"])
    second = await agent(model, get_weather).run("what did I ask?", history=first.messages)
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[len(first.messages) :] == (
        UserMessage("what did I ask?"),
        AssistantMessage("you asked about Oslo"),
    )
    assert model.requests[0].messages == (*first.messages, UserMessage("what did I ask?"))
    assert second.usage.requests == 1


async def test_a_history_with_unanswered_calls_is_answered_before_the_new_prompt() -> None:
    history = (
        UserMessage("start"),
        calls(("get_weather", '{"city": "a"}', "x"), ("get_weather", '{"city": "b"}', "y")),
        ToolResult("x", "get_weather", "sunny in a"),
    )
    ran: list[str] = []

    def get_weather(city: str) -> str:
        ran.append(city)
        return city

    model = ScriptedModel(["ok"])
    result = await agent(model, get_weather).run("go on", history=history)
    assert ran == []
    view = model.requests[0].messages
    assert calls_answered(view)
    answer = view[3]
    assert isinstance(answer, ToolResult)
    assert (answer.call_id, answer.is_error) == ("y", True)
    assert "not run" in answer.content
    assert view[4] == UserMessage("go on")
    assert result.messages[:3] == history
    assert calls_answered(result.messages)


async def test_new_call_ids_never_reuse_ids_from_the_history() -> None:
    first = await agent(
        ScriptedModel([calls(("get_weather", '{"city": "a"}', "c0")), "ok"]), get_weather
    ).run("one")
    second = await agent(
        ScriptedModel([calls(("get_weather", '{"city": "b"}', "c0")), "ok"]), get_weather
    ).run("two", history=first.messages)
    ids = [c.id for m in second.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert len(ids) == len(set(ids)) == 2
    assert calls_answered(second.messages)


# -- stopping -----------------------------------------------------------------------------------


async def test_fatal_tool_error_propagates_after_every_call_is_answered() -> None:
    def explode() -> str:
        raise FatalToolError("credentials revoked")

    async def wait() -> str:
        await asyncio.sleep(60)
        return "never"

    async def quick() -> str:
        return "done at once"

    model = ScriptedModel([calls(("explode", "{}"), ("wait", "{}"), ("quick", "{}"))])
    events: list[Event] = []
    with pytest.raises(FatalToolError, match="credentials revoked"):
        await collect(agent(model, explode, wait, quick).stream("go"), events)
    added = [e.message for e in events if isinstance(e, MessageAdded)]
    assert calls_answered(added)
    assert [r.is_error for r in results(added)] == [True, True, False]
    assert len(model.requests) == 1


def test_keyboard_interrupt_in_a_tool_propagates_out_of_the_run() -> None:
    def interrupted() -> str:
        raise KeyboardInterrupt

    model = ScriptedModel([calls(("interrupted", "{}")), "never"])
    with pytest.raises(KeyboardInterrupt):
        agent(model, interrupted).run_sync("go")
    assert len(model.requests) == 1


async def test_cancelling_a_run_mid_tool_cancels_the_tools() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def wait() -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    model = ScriptedModel([calls(("wait", "{}")), "never"])
    events: list[Event] = []

    task = asyncio.create_task(collect(agent(model, wait).stream("go"), events))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()
    assert len(model.requests) == 1


# -- streaming ----------------------------------------------------------------------------------


async def test_stream_yields_events_in_the_order_things_happen() -> None:
    model = ScriptedModel(
        [
            AssistantMessage(
                "Looking it up.",
                (ToolCall("c1", "get_weather", '{"city": "Oslo"}'),),
                stop_reason="tool_use",
            ),
            AssistantMessage("It is sunny in Oslo."),
        ]
    )
    events = [e async for e in agent(model, get_weather).stream("weather?")]
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "RunStarted",
        "MessageAdded",  # the prompt
        "ModelRequestStarted",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "MessageAdded",  # the reply
        "ToolCallStarted",
        "ToolCallFinished",
        "MessageAdded",  # the result
        "ModelRequestStarted",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "MessageAdded",
        "RunFinished",
    ]
    assert isinstance(events[0], RunStarted)
    assert events[0].prompt == "weather?"
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == "Looking it up.It is sunny in Oslo."
    requests = [e for e in events if isinstance(e, ModelRequestStarted)]
    assert [r.turn for r in requests] == [1, 2]
    assert all(r.max_context_tokens == 150_000 for r in requests)
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert not finished.is_error
    assert finished.duration >= 0
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert started.call.id == "c1"
    added = [e for e in events if isinstance(e, MessageAdded)]
    assert [e.index for e in added] == [0, 1, 2, 3]
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert last.result.output == "It is sunny in Oslo."
    assert tuple(e.message for e in added) == last.result.messages


async def test_stream_reports_a_limit_then_raises_it() -> None:
    model = FunctionModel(lambda messages, tools: calls(("get_weather", '{"city": "a"}')))
    events: list[Event] = []
    with pytest.raises(TurnLimitExceeded):
        await collect(agent(model, get_weather, limits=Limits(max_turns=1)).stream("go"), events)
    assert isinstance(events[-2], LimitReached)
    assert events[-2].reason == "turn_limit"
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.stop_reason == "turn_limit"


async def test_tool_errors_are_flagged_in_the_events() -> None:
    model = ScriptedModel([calls(("fail_always", "{}")), "ok"])
    events = [e async for e in agent(model, fail_always).stream("go")]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.is_error for e in finished] == [True]


async def test_leaving_the_stream_early_cancels_the_run() -> None:
    cancelled = asyncio.Event()

    async def wait() -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    model = ScriptedModel([calls(("wait", "{}")), "never"])
    stream = agent(model, wait).stream("go")
    async for event in stream:
        if isinstance(event, ToolCallStarted):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert cancelled.is_set()


async def test_a_retried_model_call_is_announced_so_partial_text_can_be_dropped() -> None:
    model = ScriptedModel([ModelError("overloaded", retryable=True, retry_after=0.0), "fine"])
    agent = Agent(model, backoff=Backoff.none())
    events = [e async for e in agent.stream("go")]
    retries = [e for e in events if isinstance(e, ModelRetry)]
    assert retries == [ModelRetry(turn=1, attempt=2, error="overloaded", wait=0.0)]
    assert events.index(retries[0]) < next(
        i for i, e in enumerate(events) if isinstance(e, TextDelta)
    )


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"max_tool_output": -1}, "max_tool_output"),
        ({"tool_timeout": 0}, "tool_timeout"),
        ({"model_retries": -1}, "model_retries"),
    ],
)
def test_bad_agent_options_are_config_errors(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        Agent(TestModel(), **options)


def test_the_model_comes_from_the_environment_when_not_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STEADYLOOP_MODEL", raising=False)
    with pytest.raises(ConfigError, match="STEADYLOOP_MODEL"):
        Agent()
    monkeypatch.setenv("STEADYLOOP_MODEL", "test")
    assert isinstance(Agent().model, TestModel)


@pytest.mark.parametrize("spec", ["gpt-4", "nope:model", "openai:", ""])
def test_unknown_model_specs_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError):
        Agent(spec)


async def test_cut_off_calls_are_not_counted_as_dispatched_tool_calls() -> None:
    def write_file(path: str) -> str:
        return "written"

    cut = AssistantMessage(
        tool_calls=(ToolCall("c1", "write_file", '{"path": "a.t'),), stop_reason="max_tokens"
    )
    agent = Agent(ScriptedModel([cut, "ok"]), tools=[write_file], backoff=Backoff.none())
    result = await agent.run("go")
    assert result.usage == Usage(requests=2, tool_calls=0, unreported=2)


async def test_fatal_tool_error_carries_the_partial_result() -> None:
    def explode() -> str:
        raise FatalToolError("credentials revoked")

    model = ScriptedModel([AssistantMessage(tool_calls=(ToolCall("c1", "explode", "{}"),))])
    agent = Agent(model, tools=[explode], backoff=Backoff.none())
    with pytest.raises(FatalToolError) as info:
        await agent.run("go")
    assert info.value.result is not None
    assert calls_answered(info.value.result.messages)
    assert info.value.result.usage.tool_calls == 1


async def test_identical_failures_in_one_reply_count_once_toward_the_repeat_limit() -> None:
    def lookup(key: str) -> str:
        if key == "bad":
            raise ToolError("no such key")
        return "found"

    same = tuple(ToolCall(f"c{i}", "lookup", '{"key": "bad"}') for i in range(3))
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=same),
            AssistantMessage(tool_calls=(ToolCall("d", "lookup", '{"key": "good"}'),)),
            "done",
        ]
    )
    result = await Agent(model, tools=[lookup], backoff=Backoff.none()).run("go")
    assert result.output == "done"


async def test_a_retry_after_longer_than_allowed_fails_at_once() -> None:
    quota = ModelError("quota resets in an hour", retryable=True, retry_after=3600.0)
    model = ScriptedModel([quota, "never reached"])
    agent = Agent(model, backoff=Backoff(0.0, 0.0, 0.0, longest_retry_after=60.0))
    with pytest.raises(ModelError, match="quota resets in an hour"):
        await agent.run("go")
    assert len(model.requests) == 1


async def test_calls_left_open_earlier_in_a_history_are_not_answered_out_of_place() -> None:
    history = (
        UserMessage("first"),
        AssistantMessage(tool_calls=(ToolCall("old", "lookup", "{}"),)),
        UserMessage("never mind that"),
        AssistantMessage("ok"),
    )
    model = ScriptedModel(["fine"])
    result = await Agent(model, backoff=Backoff.none()).run("again", history=history)
    # nothing is appended after "ok" for the old call: that would put a result after a user
    # message; adapters pair such a call at the wire instead
    assert result.messages[len(history)] == UserMessage("again")
    assert not [m for m in result.messages if isinstance(m, ToolResult)]
