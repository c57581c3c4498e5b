"""Dependencies: `deps=` reaches tools through `RunContext`, which the model never sees; callable
instructions make each run's system prompt. Deps are never logged."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any, Optional

import pytest

from steadyloop import (
    Agent,
    AssistantMessage,
    ConfigError,
    RunContext,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
    tool,
)
from steadyloop.dispatch import Dispatcher
from steadyloop.events import Event, InstructionsMade, MessageAdded, RunFinished
from steadyloop.messages import UserMessage
from steadyloop.retry import Backoff
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel
from steadyloop.toolthreads import ToolThreads


@dataclasses.dataclass
class Shop:
    tier: str
    orders: dict[str, str]
    secret: str = "hunter2-deps-secret"


SHOP = Shop("gold", {"A1": "delivered"})
seen: list[RunContext[Shop]] = []


@tool
async def order_status(order_id: str, ctx: RunContext[Shop]) -> str:
    """The status of an order.

    Args:
        order_id: the order's id, like A1.
    """
    seen.append(ctx)
    return ctx.deps.orders.get(order_id, "unknown")


@tool
def tier(ctx: RunContext[Shop], *, loud: bool = False) -> str:
    """The customer's tier."""
    seen.append(ctx)
    return ctx.deps.tier.upper() if loud else ctx.deps.tier


@tool
def bare(ctx: RunContext) -> str:  # type: ignore[type-arg]
    """Reads the run id."""
    return str(ctx.run_id)


def calls(*items: tuple[str, str, str], text: str = "") -> AssistantMessage:
    return AssistantMessage(
        text, tuple(ToolCall(i, n, a) for i, n, a in items), usage=Usage(input_tokens=50)
    )


@pytest.fixture(autouse=True)
def fresh() -> None:
    seen.clear()


async def test_context_parameters_are_left_out_of_the_schema_wherever_they_stand() -> None:
    assert order_status.parameters["properties"].keys() == {"order_id"}
    assert order_status.parameters["required"] == ["order_id"]
    assert tier.parameters["properties"].keys() == {"loud"}
    assert bare.parameters["properties"] == {}
    assert "ctx" not in str(order_status.parameters)


async def test_tools_get_the_deps_and_where_in_the_run_they_are() -> None:
    model = ScriptedModel(
        [
            calls(("c1", "order_status", '{"order_id": "A1"}'), ("c2", "tier", "{}")),
            calls(("c3", "tier", '{"loud": true}')),
            "done",
        ]
    )
    result = await Agent(model, tools=[order_status, tier]).run("status?", deps=SHOP)
    contents = [m.content for m in result.messages if isinstance(m, ToolResult)]
    assert contents == ["delivered", "gold", "GOLD"]
    first, second, third = sorted(seen, key=lambda c: str(c.call_id))
    assert first.deps is SHOP
    assert (first.call_id, first.turn) == ("c1", 1)
    assert (second.call_id, second.turn) == ("c2", 1)
    assert (third.call_id, third.turn) == ("c3", 2)
    # usage includes the model call that asked for the tool
    assert first.usage.requests == 1
    assert first.usage.input_tokens == 50
    assert third.usage.requests == 2
    # the transcript so far, ending with the reply that made the call
    last = first.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert [c.id for c in last.tool_calls] == ["c1", "c2"]
    assert isinstance(first.messages, tuple)


async def test_parallel_calls_each_see_their_own_call_id() -> None:
    barrier = asyncio.Barrier(3)
    ids: list[str | None] = []

    @tool
    async def wait(ctx: RunContext[None]) -> str:
        """Waits for the others."""
        await barrier.wait()
        ids.append(ctx.call_id)
        return "ok"

    three = calls(("a", "wait", "{}"), ("b", "wait", "{}"), ("c", "wait", "{}"))
    model = ScriptedModel([three, "done"])
    await Agent(model, tools=[wait]).run("go")
    assert sorted(ids) == ["a", "b", "c"]  # type: ignore[type-var]


def test_a_context_annotation_that_cannot_be_resolved_names_the_tool() -> None:
    class Local:
        pass

    def uses_local(ctx: RunContext[Local]) -> str:
        """Uses a class defined in a function."""
        return ""

    with pytest.raises(ConfigError) as error:
        tool(uses_local)
    assert str(error.value).startswith("tool 'uses_local': cannot resolve its annotations")
    assert "\n" not in str(error.value)


def test_deps_of_the_wrong_type_is_a_config_error_before_anything_runs() -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ConfigError) as error:
        Agent(model, tools=[order_status]).run_sync("go", deps={"tier": "gold"})
    assert str(error.value) == (
        "tool 'order_status': its ctx is RunContext[Shop] but deps is a dict: pass "
        "deps=Shop(...), or change the annotation"
    )
    assert model.requests == []
    # no deps at all is left to the tool; any deps suits RunContext without a type
    assert Agent(ScriptedModel(["ok"]), tools=[order_status]).run_sync("go").output == "ok"
    assert Agent(ScriptedModel(["ok"]), tools=[bare]).run_sync("go", deps=3).output == "ok"


@tool
def shop_tier(ctx: RunContext[Shop | None]) -> str:
    """The shop's tier, when there is a shop."""
    return ctx.deps.tier if ctx.deps is not None else "no shop"


@tool
def any_tier(ctx: RunContext[Any]) -> str:
    """The tier of whatever deps the run has."""
    return str(getattr(ctx.deps, "tier", "none"))


@tool
def optional_tier(ctx: RunContext[Optional[Shop]]) -> str:  # noqa: UP045 (the other spelling)
    """The shop's tier, when there is a shop."""
    return ctx.deps.tier if ctx.deps is not None else "no shop"


@pytest.mark.parametrize("read", [shop_tier, optional_tier, any_tier])
def test_a_union_or_any_deps_type_takes_deps_of_any_of_its_types(read: Tool) -> None:
    reply = calls(("c1", read.name, "{}"))
    result = Agent(ScriptedModel([reply, "ok"]), tools=[read]).run_sync("go", deps=SHOP)
    assert result.messages[2] == ToolResult("c1", read.name, "gold")


@pytest.mark.parametrize("read", [shop_tier, optional_tier])
def test_deps_fitting_no_type_of_a_union_is_a_config_error_naming_the_union(read: Tool) -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ConfigError) as error:
        Agent(model, tools=[read]).run_sync("go", deps=3)
    assert str(error.value) == (
        f"tool {read.name!r}: its ctx is RunContext[Shop | None] but deps is a int: pass deps "
        "of type Shop | None, or change the annotation"
    )
    assert model.requests == []


def test_deps_of_the_wrong_type_leave_nothing_running_in_the_log(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    agent = Agent(ScriptedModel(["done"]), tools=[order_status], store=store)
    with pytest.raises(ConfigError, match="pass deps=Shop"):
        agent.run_sync("go", run_id="t1", deps={"tier": "gold"})
    assert store.find("t1") is None  # nothing was logged, so nothing is left running
    assert agent.run_sync("go", run_id="t1", deps=SHOP).output == "done"
    assert store.run("t1").status == "answered"


async def test_callable_instructions_make_each_runs_system_prompt_once() -> None:
    made: list[RunContext[Shop]] = []

    def sync(ctx: RunContext[Shop]) -> str:
        made.append(ctx)
        return f"Customer tier: {ctx.deps.tier}."

    async def asynchronous(ctx: RunContext[Shop]) -> str:
        await asyncio.sleep(0)
        return f"Async tier: {ctx.deps.tier}."

    model = ScriptedModel([calls(("c1", "tier", "{}")), "done", "again"])
    agent = Agent(model, tools=[tier], instructions=sync)
    await agent.run("go", deps=SHOP)
    await agent.run("go", deps=Shop("silver", {}))
    assert [r.instructions for r in model.requests] == [
        "Customer tier: gold.",
        "Customer tier: gold.",
        "Customer tier: silver.",
    ]
    assert len(made) == 2
    assert made[0].deps is SHOP
    assert made[0].call_id is None
    later = ScriptedModel(["ok"])
    await Agent(later, instructions=asynchronous).run("go", deps=SHOP)
    assert later.requests[0].instructions == "Async tier: gold."


async def test_the_made_instructions_are_logged_and_deps_never_are(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    events: list[Event] = []
    model = ScriptedModel([calls(("c1", "order_status", '{"order_id": "A1"}')), "done"])
    agent = Agent(
        model,
        tools=[order_status],
        instructions=lambda ctx: f"Tier {ctx.deps.tier}; run {ctx.run_id}.",
        store=store,
    )
    result = await agent.run("status of A1?", deps=SHOP, on_event=events.append)
    assert result.run_id is not None
    logged = [e for e in store.events(result.run_id) if e.kind == "instructions"]
    assert [e.data["text"] for e in logged] == [f"Tier gold; run {result.run_id}."]
    assert any(isinstance(e, InstructionsMade) for e in events)
    assert store.run(result.run_id).config["instructions"] is None
    store.close()
    files = b"".join(f.read_bytes() for f in tmp_path.iterdir())  # noqa: ASYNC240
    assert b"gold" in files  # the instructions made from the deps are
    assert b"hunter2-deps-secret" not in files  # the deps themselves are not


async def test_stream_run_sync_and_resume_take_deps(tmp_path: Path) -> None:
    agent = Agent(ScriptedModel([calls(("c1", "tier", "{}")), "done"]), tools=[tier])
    events = [e async for e in agent.stream("go", deps=SHOP)]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert [m.content for m in finished.result.messages if isinstance(m, ToolResult)] == ["gold"]

    sync_agent = Agent(ScriptedModel([calls(("c1", "tier", "{}")), "ok"]), tools=[tier])
    sync_result = await asyncio.to_thread(sync_agent.run_sync, "go", deps=SHOP)
    assert sync_result.messages[2] == ToolResult("c1", "tier", "gold")

    @tool(idempotent=True)
    def read_tier(ctx: RunContext[Shop]) -> str:
        """The tier; safe to run again."""
        return ctx.deps.tier

    store = RunStore(tmp_path / "runs.db")
    run_id = store.start_run(model="scripted", prompt="go", history=(), config={})
    record = store.recorder(run_id)
    record(MessageAdded(0, UserMessage("go")))
    record(MessageAdded(1, calls(("c1", "read_tier", "{}"))))
    store.mark(run_id, "interrupted")
    store.release(run_id)
    resumed = Agent(ScriptedModel(["done"]), tools=[read_tier], store=store)
    result = await resumed.resume(run_id, deps=Shop("platinum", {}))
    assert result.messages[2] == ToolResult("c1", "read_tier", "platinum")


async def test_the_dispatcher_fills_in_the_context_made_for_each_call() -> None:
    threads = ToolThreads()
    dispatcher = Dispatcher(
        {t.name: t for t in (tier, order_status)},
        tool_timeout=10,
        max_output=1_000,
        backoff=Backoff.none(),
        executor=threads.get,
    )

    def context_for(call: ToolCall) -> RunContext[Shop]:
        return RunContext(Shop("silver", {"B2": "lost"}), "run-7", 3, call.id)

    turn = [
        ToolCall("t1", "tier", '{"loud": true}'),
        ToolCall("o1", "order_status", '{"order_id": "B2"}'),
    ]
    try:
        answered = await dispatcher.run(turn, context_for=context_for)
    finally:
        threads.shutdown()
    assert [o.result.content for o in answered.outcomes] == ["SILVER", "lost"]
    assert sorted((c.run_id, c.turn, c.call_id) for c in seen) == [
        ("run-7", 3, "o1"),
        ("run-7", 3, "t1"),
    ]
