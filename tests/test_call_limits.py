"""Limits on tool calls: `@tool(max_calls=N)` per tool and run (calls past N are answered "not
run", the run goes on) and `Limits(max_tool_calls=N)` over all of a run's tools (calls past N
are answered "not run", then the run stops with `ToolCallLimitExceeded`, exit code 3)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import BaseModel

from steadyloop import (
    Agent,
    AssistantMessage,
    ConfigError,
    FatalToolError,
    LimitExceeded,
    Limits,
    Message,
    ToolCall,
    ToolCallLimitExceeded,
    ToolResult,
    tool,
)
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.tools import FunctionTool, ToolSpec
from support.cli import run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "support_tickets.py"


def searching(ran: list[str], max_calls: int | None = None) -> FunctionTool:
    """A `search` tool that notes each query it ran in `ran`."""

    @tool(max_calls=max_calls)
    def search(query: str) -> str:
        """Searches the web."""
        ran.append(query)
        return f"found {query}"

    return search


def calls(*queries: str) -> AssistantMessage:
    """A reply that calls `search` once per query."""
    return AssistantMessage(
        tool_calls=tuple(ToolCall(f"c-{q}", "search", {"query": q}) for q in queries)
    )


def errors(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if isinstance(m, ToolResult) and m.is_error]


async def test_calls_past_max_calls_are_answered_not_run_and_the_run_goes_on() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls("a", "b", "c"), calls("d"), "done"])
    result = await Agent(model, tools=[searching(ran, max_calls=2)]).run("search")
    assert result.output == "done"
    assert ran == ["a", "b"]
    refused = errors(result.messages)
    assert len(refused) == 2
    assert all("search" in text and "2" in text and text.startswith("not run") for text in refused)
    assert refused[0] == (
        "not run: search may be called at most 2 times in one run, and it was; use the results "
        "you have"
    )
    assert len(model.requests) == 3


async def test_max_calls_counts_this_runs_calls_not_the_historys() -> None:
    ran: list[str] = []
    search = searching(ran, max_calls=1)
    first = await Agent(ScriptedModel([calls("a"), "one"]), tools=[search]).run("x")
    second = await Agent(ScriptedModel([calls("b"), calls("c"), "two"]), tools=[search]).run(
        "y", history=first.messages
    )
    assert ran == ["a", "b"]
    assert errors(second.messages) == [
        "not run: search may be called at most once in one run, and it was; use the results you "
        "have"
    ]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3"])
def test_max_calls_and_max_tool_calls_must_be_positive_ints(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_calls"):
        tool(max_calls=bad)(lambda: "x")  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match="max_tool_calls"):
        Limits(max_tool_calls=bad)  # type: ignore[arg-type]


async def test_max_tool_calls_runs_the_calls_within_it_then_stops_the_run(tmp_path: Path) -> None:
    ran: list[str] = []
    model = ScriptedModel([calls("a", "b"), calls("c", "d"), "never read"])
    agent = Agent(
        model, tools=[searching(ran)], limits=Limits(max_tool_calls=3), store=tmp_path / "r.db"
    )
    with pytest.raises(ToolCallLimitExceeded) as stopped:
        await agent.run("search")
    assert isinstance(stopped.value, LimitExceeded)
    assert stopped.value.reason == "tool_call_limit"
    assert str(stopped.value) == "tool call limit reached: 3 tool calls"
    partial = stopped.value.result
    assert partial.stop_reason == "tool_call_limit"
    assert ran == ["a", "b", "c"]
    assert len(model.requests) == 2  # stopped before any further model call
    assert errors(partial.messages) == ["not run: the run reached its limit of 3 tool calls"]
    assert isinstance(partial.messages[-1], ToolResult)  # every call answered
    (run,) = RunStore(tmp_path / "r.db").runs()
    assert (run.status, run.stop_reason) == ("limit", "tool_call_limit")
    assert run.config["limits"]["max_tool_calls"] == 3


async def test_a_run_that_makes_exactly_max_tool_calls_then_answers_ends_normally() -> None:
    ran: list[str] = []
    model = ScriptedModel([calls("a", "b"), "done"])
    result = await Agent(model, tools=[searching(ran)], limits=Limits(max_tool_calls=2)).run("x")
    assert result.stop_reason == "end_turn"
    assert ran == ["a", "b"]


class Verdict(BaseModel):
    ok: bool


async def test_final_answer_and_refused_calls_do_not_count_toward_max_tool_calls() -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            calls("a", "b"),  # b is refused by max_calls=1 and does not count
            calls("c"),
            AssistantMessage(tool_calls=(ToolCall("f", "final_answer", {"ok": True}),)),
        ]
    )
    agent = Agent(
        model, tools=[searching(ran, max_calls=1)], limits=Limits(max_tool_calls=1), output=Verdict
    )
    result = await agent.run("x")
    assert result.output == Verdict(ok=True)
    assert ran == ["a"]
    assert len(errors(result.messages)) == 2  # b and c: past search's own limit


async def test_a_resumed_run_counts_the_calls_it_made_before_it_stopped(tmp_path: Path) -> None:
    ran: list[str] = []
    crashed: list[bool] = []

    @tool
    def crash() -> str:
        """Fails the first time."""
        if not crashed:
            crashed.append(True)
            raise FatalToolError("disk on fire")
        return "fine"

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        made = sum(isinstance(m, AssistantMessage) for m in messages)
        if made == 0:
            return calls("a")
        if made == 1:
            return AssistantMessage(tool_calls=(ToolCall("boom", "crash", {}),))
        if made == 2:
            return calls("b")
        return AssistantMessage("done")

    agent = Agent(
        FunctionModel(reply), tools=[searching(ran, max_calls=1), crash], store=tmp_path / "r.db"
    )
    with pytest.raises(FatalToolError):
        await agent.run("x", run_id="limited")
    result = await agent.resume("limited")
    assert result.output == "done"
    assert ran == ["a"]  # the call before the stop counts: the one after it is refused
    assert errors(result.messages)[-1].startswith("not run: search may be called at most once")


def test_the_cli_stops_at_max_tool_calls_with_exit_code_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    code, _, err = run_cli(
        capsys, "run", "--tools", str(EXAMPLE), "--model", "test", "--max-tool-calls", "2", "x"
    )
    assert code == 3
    assert "tool call limit reached: 2 tool calls" in err
    (run,) = RunStore(tmp_path / "home" / "runs.db").runs()
    assert run.stop_reason == "tool_call_limit"
