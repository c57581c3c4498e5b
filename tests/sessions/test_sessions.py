"""Sessions: a run continues its session's latest transcript from the run log, on SQLite and on
a real Postgres; forks, a paused session, limits and compaction across runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from steadyloop import (
    Agent,
    Approve,
    AssistantMessage,
    Compaction,
    ConfigError,
    ContextLimitExceeded,
    Limits,
    Message,
    ModelError,
    Summary,
    ToolCall,
    TurnLimitExceeded,
    UserMessage,
    tool,
)
from steadyloop.store import open_store
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.tools import ToolSpec


def said(messages: Sequence[Message]) -> list[str]:
    """The texts of the user prompts and replies in `messages`, in order."""
    return [m.text for m in messages if isinstance(m, UserMessage | AssistantMessage) and m.text]


def test_a_run_continues_the_sessions_latest_transcript(store_url: str) -> None:
    model = ScriptedModel(["Noted: A1.", "Your order number is A1.", "Bonjour"])
    agent = Agent(model, store=store_url)
    r1 = agent.run_sync("My order number is A1.", session="user-42")
    r2 = agent.run_sync("What was my order number?", session="user-42")
    other = agent.run_sync("Hello", session="user-43")
    assert said(model.requests[1].messages) == [
        "My order number is A1.", "Noted: A1.", "What was my order number?",
    ]  # fmt: skip
    assert said(model.requests[2].messages) == ["Hello"]
    assert agent.store is not None
    runs = agent.store.session("user-42")
    assert [r.id for r in runs] == [r1.run_id, r2.run_id]
    assert [(r.session, r.previous_run_id) for r in runs] == [
        ("user-42", None), ("user-42", r1.run_id),
    ]  # fmt: skip
    assert agent.store.messages(str(r2.run_id)) == r2.messages
    assert runs[1].history == len(r1.messages)
    assert agent.store.session("nobody") == []
    assert agent.store.run(str(other.run_id)).previous_run_id is None
    agent.close_store()


def test_fork_from_branches_or_rewinds_a_session(store_url: str) -> None:
    model = ScriptedModel(["one", "two", "un", "deux bis"])
    agent = Agent(model, store=store_url)
    r1 = agent.run_sync("first", session="s")
    r2 = agent.run_sync("second", session="s")
    branch = agent.run_sync("in French", session="s-fr", fork_from=r1.run_id)
    assert said(branch.messages) == ["first", "one", "in French", "un"]
    assert agent.store is not None
    assert [r.id for r in agent.store.session("s")] == [r1.run_id, r2.run_id]  # left as it was
    rewind = agent.run_sync("second again", session="s", fork_from=r1.run_id)
    assert said(rewind.messages) == ["first", "one", "second again", "deux bis"]
    assert agent.store.session("s")[-1].id == rewind.run_id
    loose = agent.store.run(str(branch.run_id))
    assert (loose.session, loose.previous_run_id) == ("s-fr", r1.run_id)
    agent.close_store()


def test_fork_from_without_a_session_links_the_run_it_continues(store_url: str) -> None:
    agent = Agent(ScriptedModel(["one", "two"]), store=store_url)
    r1 = agent.run_sync("first")
    r2 = agent.run_sync("more", fork_from=r1.run_id)
    assert said(r2.messages) == ["first", "one", "more", "two"]
    assert agent.store is not None
    info = agent.store.run(str(r2.run_id))
    assert (info.session, info.previous_run_id) == (None, r1.run_id)
    agent.close_store()


def test_a_session_a_fork_or_history_that_cannot_be_is_refused_before_anything_runs(
    store_url: str,
) -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ConfigError, match="needs a run log"):
        Agent(model).run_sync("hi", session="s")
    agent = Agent(model, store=store_url)
    with pytest.raises(ConfigError, match="either history= or session="):
        agent.run_sync("hi", session="s", history=[UserMessage("earlier")])
    with pytest.raises(ConfigError, match="no such run"):
        agent.run_sync("hi", session="s", fork_from="missing")
    with pytest.raises(ConfigError, match="non-empty"):
        agent.run_sync("hi", session="")
    assert model.requests == []
    assert agent.store is not None
    assert agent.store.runs() == []
    agent.close_store()


@tool(approve=True)
def refund(order: str) -> str:
    """Refunds an order."""
    return f"refunded {order}"


def test_a_session_waiting_for_approval_refuses_a_new_prompt_until_resumed(
    store_url: str,
) -> None:
    model = ScriptedModel(
        [AssistantMessage(tool_calls=(ToolCall("c1", "refund", '{"order": "A1"}'),)),
         "Refunded.", "You are welcome."]
    )  # fmt: skip
    agent = Agent(model, tools=[refund], store=store_url)
    paused = agent.run_sync("Refund A1", session="s")
    assert paused.stop_reason == "approval"
    with pytest.raises(ConfigError, match=f"waits for approval in run {paused.run_id}") as caught:
        agent.run_sync("Thanks", session="s")
    assert "steadyloop resume" in str(caught.value)
    assert len(model.requests) == 1
    assert agent.store is not None
    assert len(agent.store.session("s")) == 1
    done = asyncio.run(agent.resume(str(paused.run_id), decisions={"c1": Approve()}))
    assert done.output == "Refunded."
    after = agent.run_sync("Thanks", session="s")
    assert said(after.messages)[-2:] == ["Thanks", "You are welcome."]
    assert [r.status for r in agent.store.session("s")] == ["answered", "answered"]
    agent.close_store()


def test_limits_count_each_run_and_a_stopped_or_failed_run_is_continued(store_url: str) -> None:
    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        prompt = said(messages)[-1]
        if prompt == "fail":
            raise ModelError("the provider is down")
        if prompt == "loop" or prompt.startswith("loop"):
            return AssistantMessage(tool_calls=(ToolCall("", "refund", '{"order": "B2"}'),))
        return AssistantMessage(f"ok: {prompt}")

    agent = Agent(
        FunctionModel(reply), tools=[refund], approver=lambda call, ctx: Approve(),
        limits=Limits(max_turns=2), model_retries=0, store=store_url,
    )  # fmt: skip
    for turn in range(3):  # the history's replies do not count toward max_turns
        assert agent.run_sync(f"hello {turn}", session="s").output == f"ok: hello {turn}"
    with pytest.raises(TurnLimitExceeded):
        agent.run_sync("loop", session="s")
    with pytest.raises(ModelError):
        agent.run_sync("fail", session="s")
    last = agent.run_sync("still there?", session="s")
    assert said(last.messages)[:7] == [
        "hello 0", "ok: hello 0", "hello 1", "ok: hello 1", "hello 2", "ok: hello 2", "loop",
    ]  # fmt: skip
    assert "fail" in said(last.messages)
    assert agent.store is not None
    assert [r.status for r in agent.store.session("s")] == [
        "answered", "answered", "answered", "limit", "error", "answered",
    ]  # fmt: skip
    agent.close_store()


def test_max_context_tokens_covers_the_whole_conversation(store_url: str) -> None:
    agent = Agent(
        ScriptedModel(["x" * 2000] * 10),
        limits=Limits(max_context_tokens=300),
        store=store_url,
    )
    agent.run_sync("one", session="s")
    with pytest.raises(ContextLimitExceeded):
        agent.run_sync("two", session="s")
    agent.close_store()


def test_a_compacted_conversation_goes_on_from_its_latest_summary(store_url: str) -> None:
    summaries: list[int] = []

    def summarise(messages: Sequence[Message]) -> str:
        summaries.append(len(messages))
        return f"summary {len(summaries)}"

    model = ScriptedModel([f"reply {n} " + "y" * 200 for n in range(12)])
    agent = Agent(
        model,
        limits=Limits(max_context_tokens=400),
        compaction=Compaction(keep_recent=2, trigger=0.5, summarise=summarise),
        store=store_url,
    )
    for n in range(12):
        agent.run_sync(f"turn {n}", session="s")
    assert summaries, "the conversation was compacted"
    last_view = model.requests[-1].messages
    assert said(last_view)[0] == "turn 0"  # the head stays
    assert any(isinstance(m, Summary) for m in last_view)
    assert "turn 1" not in said(last_view)  # what the summary replaced stays out of the view
    assert agent.store is not None
    runs = agent.store.session("s")
    # Each run is given the head, the summary and what followed: not the whole conversation.
    assert max(r.history for r in runs) < 12  # the whole of it would be 22 messages and more
    early = said(agent.store.messages(runs[2].id))
    assert "turn 1" in early  # ... which stays in the log, in the earlier runs
    agent.close_store()


def test_links_travel_in_exports_and_an_older_export_imports_without_them(
    store_url: str, tmp_path: Path
) -> None:
    agent = Agent(ScriptedModel(["one", "two"]), store=store_url)
    agent.run_sync("first", session="s")
    second = agent.run_sync("second", session="s")
    assert agent.store is not None
    lines = list(agent.store.to_jsonl(str(second.run_id)))
    first_id = agent.store.session("s")[0].id
    agent.close_store()
    assert '"session": "s"' in lines[0]
    assert f'"previous_run_id": "{first_id}"' in lines[0]
    other = open_store(tmp_path / "other.db")
    imported = other.run(other.from_jsonl(lines))
    assert (imported.session, imported.previous_run_id) == ("s", first_id)
    old = json.loads(lines[0])
    for column in ("session", "previous_run_id", "parent_run_id", "parent_call_id"):
        del old[column]
    old["id"] = "from-an-older-export"
    older = other.run(other.from_jsonl([json.dumps(old), *lines[1:]]))
    assert (older.session, older.previous_run_id, older.parent_run_id) == (None, None, None)
    other.close()


def test_a_runs_span_names_its_session(
    store_url: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(ScriptedModel(["one", "two"]), store=store_url, tracer_provider=provider)
    agent.run_sync("first", session="user-42")
    agent.run_sync("alone")
    runs = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert [(s.attributes or {}).get("gen_ai.conversation.id") for s in runs] == ["user-42", None]
    agent.close_store()


def test_the_viewer_lists_a_sessions_runs_in_order_and_links_them(store_url: str) -> None:
    from steadyloop.ui.data import run_list, run_page

    agent = Agent(ScriptedModel(["one", "two", "other"]), store=store_url)
    r1 = agent.run_sync("first", session="s")
    r2 = agent.run_sync("second", session="s")
    agent.run_sync("elsewhere")
    assert agent.store is not None
    listed = run_list(agent.store, session="s")["runs"]
    assert [(r["id"], r["session"]) for r in listed] == [(r1.run_id, "s"), (r2.run_id, "s")]
    links = run_page(agent.store, str(r2.run_id))["run"]["links"]
    assert links["session_runs"] == [r1.run_id, r2.run_id]
    assert (links["session"], links["previous"], links["children"]) == ("s", r1.run_id, [])
    agent.close_store()
