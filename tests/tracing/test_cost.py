"""What runs cost: per reply from the genai-prices tables, summed per run, capped by
`Limits(max_cost_usd=...)`; unknown prices stay unknown."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import genai_prices
import pytest

from steadyloop import (
    Agent,
    AssistantMessage,
    Compaction,
    ConfigError,
    CostLimitExceeded,
    LimitExceeded,
    Limits,
    ToolCall,
    Usage,
)
from steadyloop.messages import Message
from steadyloop.testing import FunctionModel, ScriptedModel, TestModel
from steadyloop.tools import ToolSpec

MODEL = "openai:gpt-4.1-mini"


def price(input_tokens: int, output_tokens: int, cache_read_tokens: int = 0) -> float:
    """What the tables say those tokens of gpt-4.1-mini cost."""
    usage = genai_prices.Usage(
        input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=cache_read_tokens
    )
    return float(genai_prices.calc_price(usage, "gpt-4.1-mini", provider_id="openai").total_price)


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def adding(turns: int, usage: Usage) -> list[AssistantMessage]:
    """`turns` replies that each call add, reporting `usage`, then an answer."""
    replies = [
        AssistantMessage(tool_calls=(ToolCall(f"c{i}", "add", '{"a": 1, "b": 2}'),), usage=usage)
        for i in range(turns)
    ]
    return [*replies, AssistantMessage("done", usage=usage)]


async def test_each_reply_is_priced_and_the_run_sums_them() -> None:
    usage = Usage(10_000, 1_000, cache_read_tokens=4_000)
    agent = Agent(ScriptedModel(adding(2, usage), name=MODEL), tools=[add])
    result = await agent.run("add")
    replies = [m for m in result.messages if isinstance(m, AssistantMessage)]
    each = price(10_000, 1_000, 4_000)
    assert each > 0
    for reply in replies:
        assert reply.usage is not None
        assert reply.usage.cost_usd == pytest.approx(each)
    assert result.usage.cost_usd == pytest.approx(3 * each)
    assert result.usage.input_tokens == 30_000


async def test_fakes_and_unknown_models_have_no_price() -> None:
    usage = Usage(1_000, 100)
    for model in (
        ScriptedModel(adding(1, usage)),
        ScriptedModel(adding(1, usage), name="openai:no-such-model-anywhere"),
        ScriptedModel(adding(1, usage), name="nowhere:gpt-4.1-mini"),
    ):
        result = await Agent(model, tools=[add]).run("add")
        assert result.usage.cost_usd is None
        assert result.usage.input_tokens == 2_000
    assert (await Agent(TestModel(), tools=[add]).run("hi")).usage.cost_usd is None


async def test_a_reply_without_usage_has_no_cost_and_keeps_the_others() -> None:
    replies = [
        AssistantMessage(tool_calls=(ToolCall("c", "add", '{"a": 1, "b": 2}'),)),
        AssistantMessage("done", usage=Usage(1_000, 100)),
    ]
    result = await Agent(ScriptedModel(replies, name=MODEL), tools=[add]).run("add")
    assert result.messages[1] == replies[0]
    assert result.usage.cost_usd == pytest.approx(price(1_000, 100))


def test_usage_sums_known_costs_and_keeps_unknown_apart_from_zero() -> None:
    assert (Usage() + Usage()).cost_usd is None
    assert (Usage(cost_usd=0.0) + Usage()).cost_usd == 0.0
    assert (Usage() + Usage(cost_usd=0.25)).cost_usd == 0.25
    assert (Usage(cost_usd=0.25) + Usage(cost_usd=0.5)).cost_usd == 0.75


def test_usage_json_keeps_the_cost_and_reads_logs_written_before_it() -> None:
    usage = Usage(10, 5, 1, 2, 3, 4, cost_usd=0.0125)
    assert Usage.from_dict(json.loads(json.dumps(usage.to_dict()))) == usage
    assert Usage.from_dict(Usage(1, 2).to_dict()).cost_usd is None
    old = {"input_tokens": 10, "output_tokens": 5, "requests": 1, "tool_calls": 2}
    assert Usage.from_dict(old) == Usage(10, 5, 1, 2)


async def test_a_cost_limit_stops_the_run_before_the_call_that_would_go_over() -> None:
    each = price(100_000, 1_000)
    model = ScriptedModel(adding(10, Usage(100_000, 1_000)), name=MODEL)
    agent = Agent(model, tools=[add], limits=Limits(max_cost_usd=each * 2.5))
    with pytest.raises(CostLimitExceeded) as stopped:
        await agent.run("add forever")
    assert isinstance(stopped.value, LimitExceeded)
    assert "cost" in stopped.value.reason
    partial = stopped.value.result
    assert "cost" in partial.stop_reason
    assert len(model.requests) == 3  # calls start while the cost is below the limit
    assert partial.usage.cost_usd == pytest.approx(3 * each)
    assert partial.messages[-1].type == "tool_result"  # every call answered


async def test_a_run_under_its_cost_limit_answers() -> None:
    model = ScriptedModel(adding(1, Usage(1_000, 100)), name=MODEL)
    result = await Agent(model, tools=[add], limits=Limits(max_cost_usd=5.0)).run("add")
    assert result.stop_reason == "end_turn"


async def test_a_cost_limit_on_a_model_without_a_price_does_not_start() -> None:
    for model in (ScriptedModel(["hi"]), ScriptedModel(["hi"], name="openai:no-such-model")):
        agent = Agent(model, limits=Limits(max_cost_usd=1.0))
        with pytest.raises(ConfigError, match="max_cost_usd"):
            await agent.run("hi")
        assert model.requests == []


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, True, "1"])
def test_a_cost_limit_is_a_positive_number_of_dollars(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_cost_usd"):
        Limits(max_cost_usd=bad)  # type: ignore[arg-type]


def read_page(n: int) -> str:
    """Reads one page of a long document."""
    return f"page {n}: " + "lorem ipsum " * 40


async def test_the_model_s_compaction_summaries_are_paid_for() -> None:
    turn = 0
    summaries = 0
    reported: list[Usage] = []

    def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        nonlocal turn, summaries
        if not tools:  # the summary request
            summaries += 1
            reported.append(Usage(2_000, 200))
            return AssistantMessage("the gist", usage=reported[-1])
        turn += 1
        reported.append(Usage(180 * len(messages), 10))
        if turn > 8:
            return AssistantMessage("read it all", usage=reported[-1])
        call = ToolCall(f"p{turn}", "read_page", f'{{"n": {turn}}}')
        return AssistantMessage(tool_calls=(call,), usage=reported[-1])

    agent = Agent(
        FunctionModel(decide, name=MODEL),
        tools=[read_page],
        limits=Limits(max_context_tokens=1_000),
        compaction=Compaction(keep_recent=2, trigger=0.6),
    )
    result = await agent.run("read the document")
    assert summaries > 0
    assert result.usage.requests == 9 + summaries
    expected = sum(price(u.input_tokens, u.output_tokens) for u in reported)
    assert result.usage.cost_usd == pytest.approx(expected)
