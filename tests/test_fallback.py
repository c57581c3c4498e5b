"""`Fallback(*models)` and the `fallback:A,B` spec: the next model only after the current one's
retries are spent, never on a `ConfigError` or a context-window error, and every reply names
the model that made it (result, run log, `show`, spans, `usage_by_model`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from provider_anthropic.anthropic_fake_server import FakeAnthropic, message, text, tool_use
from provider_openai.openai_fake_server import Fail, FakeOpenAI, Reply
from steadyloop import (
    Agent,
    Approve,
    AssistantMessage,
    ConfigError,
    ContextLimitExceeded,
    ContextWindowExceeded,
    Fallback,
    Limits,
    ModelError,
    ToolCall,
    UserMessage,
    tool,
)
from steadyloop.events import Event, ModelFallback, ModelRetry, RunFinished
from steadyloop.models import ModelRequest, resolve_model
from steadyloop.models.anthropic import AnthropicModel
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.replay import replay_run
from steadyloop.retry import Backoff
from steadyloop.store import open_store
from steadyloop.testing import FunctionModel, ScriptedModel
from support.cli import run_cli
from tracing.span_checks import attributes, named

OPENAI = "openai:gpt-4.1-mini"
CLAUDE = "anthropic:claude-sonnet-4-6"
OVERLOADED = {"error": {"message": "The server is overloaded.", "type": "server_error"}}
UNAVAILABLE = Fail(503, OVERLOADED, {"retry-after": "0"})


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


def outage(times: int) -> list[ModelError]:
    return [ModelError("503 overloaded", retryable=True, status=503) for _ in range(times)]


def replies(messages: Sequence[object]) -> list[AssistantMessage]:
    return [m for m in messages if isinstance(m, AssistantMessage)]


async def test_the_next_model_answers_only_after_the_first_ones_retries_are_spent() -> None:
    first = ScriptedModel([*outage(3), "second turn from the first model"], name="first")
    second = ScriptedModel(["first turn from the second model"], name="second")
    agent = Agent(Fallback(first, second), model_retries=2, backoff=Backoff.none())
    async with agent:
        events: list[Event] = [e async for e in agent.stream("one")]
        again = await agent.run("two", history=next(
            e.result for e in events if isinstance(e, RunFinished)).messages)  # fmt: skip
    moves = [e for e in events if isinstance(e, ModelRetry | ModelFallback)]
    assert [type(e).__name__ for e in moves] == ["ModelRetry", "ModelRetry", "ModelFallback"]
    assert moves[-1] == ModelFallback(1, "first", "second", "503 overloaded")
    assert (len(first.requests), len(second.requests)) == (4, 1)  # 3 attempts, then the next turn
    assert [r.model for r in replies(again.messages)] == ["second", "first"]
    assert again.output == "second turn from the first model"  # no stickiness
    assert set(again.usage_by_model) == {"first"}  # this run's own calls only


async def test_a_config_error_is_raised_at_once_whatever_on_says() -> None:
    first = ScriptedModel([ConfigError("the key was rejected")], name="first")
    second = ScriptedModel(["never"], name="second")
    agent = Agent(Fallback(first, second, on=lambda e: True), model_retries=2)
    with pytest.raises(ConfigError, match="the key was rejected"):
        await agent.run("hi")
    assert (len(first.requests), len(second.requests)) == (1, 0)


async def test_a_context_window_error_stops_the_run_without_trying_the_next_model() -> None:
    first = ScriptedModel([ContextWindowExceeded("prompt is too long")], name="first")
    second = ScriptedModel(["never"], name="second")
    agent = Agent(Fallback(first, second, on=lambda e: True), model_retries=2)
    with pytest.raises(ContextLimitExceeded):
        await agent.run("hi")
    assert (len(first.requests), len(second.requests)) == (1, 0)


@pytest.mark.parametrize("moves_on", [False, True], ids=["default", "on-400"])
async def test_a_plain_400_moves_on_only_when_on_accepts_it(moves_on: bool) -> None:
    first = ScriptedModel([ModelError("bad request", status=400)], name="first")
    second = ScriptedModel(["from the second model"], name="second")
    on = (lambda e: e.status == 400) if moves_on else None
    agent = Agent(Fallback(first, second, on=on), model_retries=2, backoff=Backoff.none())
    if not moves_on:
        with pytest.raises(ModelError, match="bad request"):
            await agent.run("hi")
        assert len(second.requests) == 0
        return
    result = await agent.run("hi")
    assert result.output == "from the second model"
    assert len(first.requests) == 1  # not retryable: no retry of the first model


async def test_outside_a_run_each_model_is_tried_once_in_order() -> None:
    first = ScriptedModel(outage(1), name="first")
    third = ScriptedModel(["answer"], name="third")
    chain = Fallback(first, ScriptedModel(outage(1), name="second"), third)
    reply = await chain.request(ModelRequest(None, (UserMessage("hi"),), ()))
    assert reply.text == "answer"
    assert reply.model == "third"
    assert (len(first.requests), len(third.requests)) == (1, 1)


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ((OPENAI,), "at least two models"),
        ((OPENAI, OPENAI), "more than once"),
        ((f"fallback:{OPENAI},{CLAUDE}", "test"), "cannot hold another Fallback"),
    ],
)
def test_a_chain_that_cannot_work_is_refused_when_made(
    models: tuple[str, ...], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with pytest.raises(ConfigError, match=message):
        Fallback(*models)


def test_the_name_is_a_spec_that_builds_the_same_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    chain = resolve_model(f"fallback:{OPENAI}, {CLAUDE}", settings={"temperature": 0})
    assert isinstance(chain, Fallback)
    assert chain.name == f"fallback:{OPENAI},{CLAUDE}"
    assert [type(m) for m in chain.models] == [OpenAIChatModel, AnthropicModel]
    assert all(m.settings == {"temperature": 0} for m in chain.models)  # type: ignore[attr-defined]
    assert resolve_model(chain.name).name == chain.name


async def test_a_cost_limit_needs_a_price_for_every_model_of_the_chain() -> None:
    unpriced = FunctionModel(lambda m, t: AssistantMessage("hi"), name="function")
    openai = OpenAIChatModel("gpt-4.1-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    agent = Agent(Fallback(openai, unpriced), limits=Limits(max_cost_usd=1.0))
    with pytest.raises(ConfigError, match="needs the price of function"):
        await agent.run("hi")


async def test_an_openai_outage_is_answered_by_claude_with_the_history_in_claudes_rules(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Turn 1 is OpenAI's call; turn 2 finds OpenAI down (503 on each of its 2 attempts) and
    Claude answers from a history holding OpenAI's call, which the Claude stand-in accepts."""
    with FakeOpenAI() as openai_fake, FakeAnthropic([message(text("Paris is sunny."))]) as claude:
        openai_fake.queue(
            Reply(calls=[("call_Ab9", "get_weather", '{"city": "Paris"}')]),
            UNAVAILABLE,
            UNAVAILABLE,
        )
        chain = Fallback(
            OpenAIChatModel("gpt-4.1-mini", base_url=openai_fake.base_url, api_key="sk-test"),
            AnthropicModel("claude-sonnet-4-6", base_url=claude.url, api_key="sk-ant-test"),
        )
        store = str(tmp_path / "runs.db")
        agent = Agent(
            chain, tools=[get_weather], model_retries=1, backoff=Backoff.none(), store=store,
            tracer_provider=provider,
        )  # fmt: skip
        async with agent:
            result = await agent.run("weather in Paris?")
    assert result.output == "Paris is sunny."
    assert claude.rejections == []
    assert openai_fake.rejected == []
    sent = json.dumps(claude.requests[0])
    assert '"tool_use_id": "call_Ab9"' in sent
    assert "chatcmpl" not in sent
    assert [r.model for r in replies(result.messages)] == [OPENAI, CLAUDE]
    by_model = result.usage_by_model
    assert by_model.keys() == {OPENAI, CLAUDE}
    assert (by_model[OPENAI].requests, by_model[CLAUDE].requests) == (1, 1)
    costs = [by_model[OPENAI].cost_usd, by_model[CLAUDE].cost_usd]
    assert all(cost is not None and cost > 0 for cost in costs)
    assert result.usage.cost_usd == pytest.approx(sum(c for c in costs if c is not None))
    assert by_model[CLAUDE].cost_usd != by_model[OPENAI].cost_usd  # each at its own price

    log = open_store(store)
    events = log.events(result.run_id or "")
    log.close()
    logged = [e.data["message"] for e in events if e.kind == "message"]
    assert [m.get("model") for m in logged if m["type"] == "assistant"] == [OPENAI, CLAUDE]
    moved = [e.data for e in events if e.kind == "model_fallback"]
    assert [(m["turn"], m["failed"], m["next"]) for m in moved] == [(2, OPENAI, CLAUDE)]

    second_chat = named(exporter.get_finished_spans(), f"chat {chain.name.partition(':')[2]}")
    assert [attributes(s)["gen_ai.response.model"] for s in second_chat] == [
        "gpt-4.1-mini",
        "claude-sonnet-4-6",
    ]
    fallbacks = [e for s in second_chat for e in s.events if e.name == "steadyloop.model_fallback"]
    assert len(fallbacks) == 1
    assert dict(fallbacks[0].attributes or {}) == {
        "steadyloop.fallback.from": OPENAI,
        "steadyloop.fallback.to": CLAUDE,
    }


def test_the_cli_runs_a_fallback_spec_and_show_names_the_model_that_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "runs.db")
    tools = tmp_path / "tools.py"
    tools.write_text(
        "from steadyloop import tool\n\n@tool\ndef get_weather(city: str) -> str:\n"
        '    """The weather in a city."""\n    return f"sunny in {city}"\n'
    )
    claude_turns = [
        message(tool_use("toolu_1", "get_weather", {"city": "Oslo"})),
        message(text("Oslo is sunny.")),
    ]
    with FakeOpenAI() as openai_fake, FakeAnthropic(claude_turns) as claude:
        openai_fake.queue(*[UNAVAILABLE] * 6)
        monkeypatch.setenv("OPENAI_BASE_URL", openai_fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        spec = f"fallback:{OPENAI},{CLAUDE}"
        code, out, err = run_cli(
            capsys, "run", "--model", spec, "--tools", str(tools), "--store", store, "--json",
            "weather in Oslo?",
        )  # fmt: skip
    assert code == 0, err
    run = json.loads(out)
    assert run["output"] == "Oslo is sunny."
    assert len(openai_fake.requests) == 6  # 3 attempts each turn: every turn starts at OpenAI
    code, shown, _ = run_cli(capsys, "show", run["run_id"], "--store", store)
    assert code == 0
    lines = shown.splitlines()
    assert f"run {run['run_id']} · {spec} · answered (end_turn)" in lines
    turn_two = lines.index(next(line for line in lines if line.startswith("── turn 2")))
    assert any(line.startswith(f"  ⇢ {OPENAI} failed (") and line.endswith(f"trying {CLAUDE}")
               for line in lines[:turn_two])  # fmt: skip
    assert lines.count(f"answered by {CLAUDE}") == 2
    code, listed, _ = run_cli(capsys, "logs", "--store", store)
    assert spec[:28] in listed


async def test_a_fallback_run_paused_for_approval_resumes_and_replays_from_the_log(
    tmp_path: Path,
) -> None:
    """Fallback meets approvals, resume from the log and replay: the reply the second model made
    before the pause keeps its model through the log, the resumed run prices each reply under
    the model that made it, and a replay of the finished run matches."""
    paid: list[int] = []

    @tool(approve=True)
    def pay(amount: int) -> str:
        """Pays an amount.

        Args:
            amount: euros.
        """
        paid.append(amount)
        return f"paid {amount}"

    call = AssistantMessage(tool_calls=(ToolCall("p1", "pay", '{"amount": 5}'),))
    first = ScriptedModel([*outage(1), "Done: paid 5."], name="first")
    second = ScriptedModel([call], name="second")
    store = open_store(tmp_path / "runs.db")
    agent = Agent(
        Fallback(first, second), tools=[pay], store=store, model_retries=0, backoff=Backoff.none()
    )
    async with agent:
        paused = await agent.run("pay 5", run_id="r1")
        assert paused.stop_reason == "approval"
        resumed = await agent.resume("r1", decisions={"p1": Approve()})
    assert paid == [5]
    assert [r.model for r in replies(resumed.messages)] == ["second", "first"]
    assert [r.model for r in replies(store.messages("r1"))] == ["second", "first"]
    assert set(resumed.usage_by_model) == {"first", "second"}
    report = await replay_run(store, "r1", [pay])
    assert report.divergence is None
    store.close()
