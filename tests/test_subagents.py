"""Sub-agents (`Agent.as_tool`): the child run is logged under its parent run and call, its
usage and cost roll up into the parent's, the parent's cost budget bounds it, its limit stops
are error results the parent's model reads, its spans nest under the parent's tool span, and a
resumed parent never runs a finished child again and goes on with one that was cut short."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import genai_prices
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from steadyloop import (
    Agent,
    AssistantMessage,
    CostLimitExceeded,
    FatalToolError,
    Limits,
    Message,
    ModelError,
    RunContext,
    ToolCall,
    ToolResult,
    Usage,
    tool,
)
from steadyloop.store import open_store
from steadyloop.subagents import child_run_id
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.tools import ToolSpec
from support.processes import python_env

MODEL = "openai:gpt-4.1-mini"
SCRIPT = Path(__file__).resolve().parent / "subagent_process.py"
USAGE = Usage(100_000, 1_000)


def price(usage: Usage) -> float:
    """What the tables say `usage` of gpt-4.1-mini costs."""
    tokens = genai_prices.Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    return float(genai_prices.calc_price(tokens, "gpt-4.1-mini", provider_id="openai").total_price)


@tool
def lookup(topic: str) -> str:
    """Looks a topic up."""
    return f"{topic}: three vendors"


def asks(name: str, arguments: dict[str, Any], call_id: str = "b1") -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(call_id, name, arguments),), usage=USAGE)


def research_call(prompt: str = "Which vendors are there?") -> AssistantMessage:
    return asks("research", {"prompt": prompt})


def results(messages: Sequence[object]) -> list[ToolResult]:
    return [m for m in messages if isinstance(m, ToolResult)]


async def test_the_child_reads_the_prompt_alone_and_its_answer_is_the_result() -> None:
    child_model = ScriptedModel(["three vendors: A, B, C"])
    research = Agent(child_model).as_tool(name="research", description="Researches.")
    assert research.parameters["required"] == ["prompt"]
    assert list(research.parameters["properties"]) == ["prompt"]
    boss = Agent(ScriptedModel([research_call("Find the vendors."), "done"]), tools=[research])
    result = await boss.run("Compare the vendors, please.")
    (answer,) = results(result.messages)
    assert (answer.content, answer.is_error) == ("three vendors: A, B, C", False)
    (request,) = child_model.requests
    assert [m.text for m in request.messages] == ["Find the vendors."]  # type: ignore[union-attr]


async def test_the_child_runs_with_the_calling_runs_deps() -> None:
    @tool
    def whoami(ctx: RunContext[str]) -> str:
        """Names the user the run serves."""
        return f"user {ctx.deps}"

    child_model = ScriptedModel([asks("whoami", {}, "r1"), "ok"])
    child = Agent(child_model, tools=[whoami])
    boss = Agent(
        ScriptedModel([research_call(), "done"]),
        tools=[child.as_tool(name="research", description="R.")],
    )
    await boss.run("Who?", deps="ada")
    child_view = child_model.requests[-1].messages
    assert [m.content for m in child_view if isinstance(m, ToolResult)] == ["user ada"]


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
async def test_usage_and_cost_roll_up_and_the_child_is_logged_under_its_parent(
    store_url: str,
) -> None:
    child_replies = [
        asks("lookup", {"topic": "vendors"}, "r1"),
        AssistantMessage("A, B", usage=USAGE),
    ]
    research = Agent(ScriptedModel(child_replies, name=MODEL), tools=[lookup]).as_tool(
        name="research", description="Researches."
    )
    boss_model = ScriptedModel([research_call(), AssistantMessage("done", usage=USAGE)], name=MODEL)
    boss = Agent(boss_model, tools=[research], store=store_url)
    result = await boss.run("Compare.", run_id="boss")
    assert result.usage.requests == 4
    assert result.usage.tool_calls == 2
    assert result.usage.input_tokens == 4 * USAGE.input_tokens

    store = open_store(store_url)
    try:
        (child,) = store.children("boss")
        assert child.id == child_run_id("boss", "b1")
        assert (child.parent_run_id, child.parent_call_id, child.session) == ("boss", "b1", None)
        assert (child.usage.requests, child.usage.tool_calls) == (2, 1)
        parent = store.run("boss")
        assert parent.usage.requests == 4  # the logged usage is the rolled-up one
        own = [
            m.usage.cost_usd or 0.0
            for m in result.messages
            if isinstance(m, AssistantMessage) and m.usage is not None
        ]
        assert child.usage.cost_usd is not None
        assert child.usage.cost_usd == pytest.approx(2 * price(USAGE))
        assert result.usage.cost_usd == pytest.approx(sum(own) + child.usage.cost_usd)
        assert parent.usage.cost_usd == pytest.approx(result.usage.cost_usd)
    finally:
        store.close()
        await boss.aclose()


async def test_the_parents_budget_bounds_the_child_and_the_parent_stops_after_it() -> None:
    child_model = ScriptedModel([asks("lookup", {"topic": "x"}, "r1"), "never"], name=MODEL)
    research = Agent(child_model, tools=[lookup]).as_tool(name="research", description="R.")
    boss_model = ScriptedModel([research_call(), "never"], name=MODEL)
    limits = Limits(max_cost_usd=1.5 * price(USAGE))
    boss = Agent(boss_model, tools=[research], limits=limits)
    with pytest.raises(CostLimitExceeded) as stopped:
        await boss.run("Compare.")
    (answer,) = results(stopped.value.result.messages)
    assert answer.is_error
    assert "research" in answer.content
    assert "cost" in answer.content
    assert len(boss_model.requests) + len(child_model.requests) == 2
    assert stopped.value.result.usage.cost_usd == pytest.approx(2 * price(USAGE))


async def test_a_call_with_no_budget_left_starts_no_child() -> None:
    child_model = ScriptedModel(["never"], name=MODEL)
    research = Agent(child_model).as_tool(name="research", description="R.")
    boss = Agent(
        ScriptedModel([research_call(), "never"], name=MODEL),
        tools=[research],
        limits=Limits(max_cost_usd=0.5 * price(USAGE)),
    )
    with pytest.raises(CostLimitExceeded) as stopped:
        await boss.run("Compare.")
    (answer,) = results(stopped.value.result.messages)
    assert answer.is_error
    assert answer.content.startswith("not run: the run has spent its cost budget")
    assert child_model.requests == []


async def test_children_of_one_turn_share_the_budget_their_caller_has_left() -> None:
    def research(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        """Looks the topic up, then answers: two model calls of one price each."""
        if any(isinstance(m, ToolResult) for m in messages):
            return AssistantMessage("found it", usage=USAGE)
        return asks("lookup", {"topic": "x"}, "r1")

    child_model = FunctionModel(research, name=MODEL)
    boss_model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall("b1", "research", {"prompt": "vendor A"}),
                    ToolCall("b2", "research", {"prompt": "vendor B"}),
                ),
                usage=USAGE,
            ),
            "never",
        ],
        name=MODEL,
    )
    boss = Agent(
        boss_model,
        tools=[Agent(child_model, tools=[lookup]).as_tool(name="research", description="R.")],
        limits=Limits(max_cost_usd=3.5 * price(USAGE)),
    )
    with pytest.raises(CostLimitExceeded) as stopped:
        await boss.run("Compare.")
    # 2.5 calls' worth is left for the two children, who would make four calls on their own
    # budgets: together they stop once they have spent it, after the call that crossed it.
    assert len(child_model.requests) == 3
    assert stopped.value.result.usage.cost_usd == pytest.approx(4 * price(USAGE))
    answers = results(stopped.value.result.messages)
    assert sorted(a.is_error for a in answers) == [False, True]
    (refused,) = [a for a in answers if a.is_error]
    assert refused.content.startswith("research stopped before answering: cost limit reached")


async def test_a_child_that_fails_without_a_log_still_bills_its_caller() -> None:
    child = Agent(
        ScriptedModel([asks("lookup", {"topic": "x"}, "r1"), ModelError("down")], name=MODEL),
        tools=[lookup],
        model_retries=0,
    )
    boss = Agent(
        ScriptedModel([research_call(), AssistantMessage("done", usage=USAGE)], name=MODEL),
        tools=[child.as_tool(name="research", description="R.")],
    )
    result = await boss.run("Compare.")
    assert results(result.messages)[0].content == "research failed: ModelError"
    # the parent's two replies and call, and the child's one reply and call before it failed
    assert (result.usage.requests, result.usage.tool_calls) == (3, 2)
    assert result.usage.input_tokens == 3 * USAGE.input_tokens
    assert result.usage.cost_usd == pytest.approx(3 * price(USAGE))


async def test_a_child_stopped_by_its_turn_limit_is_an_error_the_parent_reads(
    tmp_path: Path,
) -> None:
    child_replies = [
        AssistantMessage("halfway there", tool_calls=(ToolCall("r1", "lookup", {"topic": "x"}),))
    ]
    research = Agent(
        ScriptedModel(child_replies), tools=[lookup], limits=Limits(max_turns=1)
    ).as_tool(name="research", description="R.")
    boss = Agent(
        ScriptedModel([research_call(), "done anyway"]), tools=[research], store=tmp_path / "r.db"
    )
    result = await boss.run("Compare.", run_id="boss")
    assert result.output == "done anyway"
    (answer,) = results(result.messages)
    assert answer.is_error
    assert answer.content.startswith("research stopped before answering: turn limit reached")
    assert answer.content.endswith("halfway there")
    assert boss.store is not None
    (child,) = boss.store.children("boss")
    assert (child.status, child.stop_reason) == ("limit", "turn_limit")


async def test_a_failed_child_is_an_error_result_and_a_fatal_tool_error_stops_the_parent() -> None:
    failing = Agent(ScriptedModel([ModelError("provider down")]), model_retries=0)
    boss = Agent(
        ScriptedModel([research_call(), "done"]),
        tools=[failing.as_tool(name="research", description="R.")],
    )
    result = await boss.run("Compare.")
    assert results(result.messages)[0].content == "research failed: ModelError"

    @tool
    def explode() -> str:
        """Fails for good."""
        raise FatalToolError("the disk is gone")

    fatal = Agent(ScriptedModel([asks("explode", {}, "r1")]), tools=[explode])
    boss = Agent(
        ScriptedModel([research_call(), "never"]),
        tools=[fatal.as_tool(name="research", description="R.")],
    )
    with pytest.raises(FatalToolError, match="the disk is gone"):
        await boss.run("Compare.")


async def test_a_child_paused_for_approval_answers_with_its_waiting_calls(tmp_path: Path) -> None:
    @tool(approve=True)
    def refund(amount: int) -> str:
        """Refunds money."""
        return "refunded"

    child = Agent(ScriptedModel([asks("refund", {"amount": 5}, "r1")]), tools=[refund])
    boss = Agent(
        ScriptedModel([research_call(), "waiting on the refund"]),
        tools=[child.as_tool(name="research", description="R.")],
        store=tmp_path / "r.db",
    )
    result = await boss.run("Refund.", run_id="boss")
    (answer,) = results(result.messages)
    assert answer.is_error
    assert "r1 (refund)" in answer.content
    assert child_run_id("boss", "b1") in answer.content
    assert boss.store is not None
    assert boss.store.run(child_run_id("boss", "b1")).status == "paused"


async def test_the_childs_spans_nest_under_the_parents_tool_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    child = Agent(
        ScriptedModel([asks("lookup", {"topic": "x"}, "r1"), "A, B"], name="researcher"),
        tools=[lookup],
    )
    boss = Agent(
        ScriptedModel([research_call(), "done"], name="boss"),
        tools=[child.as_tool(name="research", description="R.")],
        tracer_provider=provider,
    )
    await boss.run("Compare.")
    spans = exporter.get_finished_spans()
    by_name = {span.name: span for span in spans}
    runs = [s for s in spans if s.name == "invoke_agent"]
    assert len(runs) == 2
    boss_run = next(s for s in runs if s.parent is None)
    child_run = next(s for s in runs if s.parent is not None)
    tool_span = by_name["execute_tool research"]
    assert parent_of(tool_span) == boss_run.context.span_id
    assert parent_of(child_run) == tool_span.context.span_id
    assert {s.context.trace_id for s in spans} == {boss_run.context.trace_id}
    assert parent_of(by_name["chat researcher"]) == child_run.context.span_id
    assert parent_of(by_name["execute_tool lookup"]) == child_run.context.span_id


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def run_boss(store: str, folder: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), store, str(folder), mode],
        env=python_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_parent_killed_inside_its_childs_model_call_resumes_the_same_child(
    store_url: str, tmp_path: Path
) -> None:
    killed = run_boss(store_url, tmp_path, "kill-in-child")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert lines(tmp_path / "calls.log") == ["lookup"]

    resumed = run_boss(store_url, tmp_path, "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split() == ["compared", "4"]
    # The child's first model call and its tool were not repeated: only the killed call was.
    assert lines(tmp_path / "calls.log") == ["lookup"]
    child_calls = [line for line in lines(tmp_path / "models.log") if line.startswith("researcher")]
    assert child_calls == ["researcher 1", "researcher 2", "researcher 2"]
    store = open_store(store_url)
    try:
        (child,) = store.children("boss-run")
        assert child.status == "answered"
        assert store.run("boss-run").usage.requests == 4
    finally:
        store.close()


def test_a_parent_killed_after_its_child_answered_never_runs_it_again(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    killed = run_boss(store, tmp_path, "kill-after-child")
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    resumed = run_boss(store, tmp_path, "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split() == ["compared", "4"]
    child_calls = [line for line in lines(tmp_path / "models.log") if line.startswith("researcher")]
    assert child_calls == ["researcher 1", "researcher 2"]
    assert lines(tmp_path / "calls.log") == ["lookup"]
    log = open_store(store)
    try:
        assert len(log.children("boss-run")) == 1
    finally:
        log.close()
