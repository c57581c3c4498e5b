"""The rules every run log keeps, checked on SQLite and on a real Postgres."""

from __future__ import annotations

import asyncio
import threading

import pytest

from steadyloop import Agent, AssistantMessage, ConfigError, ToolCall, ToolResult, tool
from steadyloop.store import RunLog, open_store
from steadyloop.testing import ScriptedModel


@tool
def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper()


def calls(*texts: str) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(
            ToolCall(f"c{n}", "shout", f'{{"text": "{t}"}}') for n, t in enumerate(texts)
        )
    )


def test_a_run_and_its_transcript_read_back(store: RunLog) -> None:
    result = Agent(ScriptedModel([calls("a", "b"), "done"]), tools=[shout], store=store).run_sync(
        "go"
    )
    assert result.run_id is not None
    assert store.messages(result.run_id) == result.messages
    info = store.run(result.run_id)
    assert (info.status, info.stop_reason, info.usage.requests) == ("answered", "end_turn", 2)
    assert [r.id for r in store.runs()] == [result.run_id]


def test_ids_are_looked_up_exactly(store: RunLog) -> None:
    for run_id in ("b1:t1", "b1:t10"):
        Agent(ScriptedModel(["ok " + run_id]), store=store).run_sync("go", run_id=run_id)
    assert store.run("b1:t1").id == "b1:t1"
    assert store.messages("b1:t1")[-1] == AssistantMessage("ok b1:t1")
    with pytest.raises(ConfigError, match="no run 'b1:t'"):
        store.run("b1:t")
    with pytest.raises(ConfigError, match="no run"):
        asyncio.run(Agent("test", store=store).resume("b1:t"))


def test_an_id_prefix_matches_case_and_wildcards_as_written(store: RunLog) -> None:
    ids = ("nightly:q1", "Nightly:q1", "NIGHTLY:q2", "a_b:1", "axb:1", "50%:1", "500:1")
    for run_id in ids:
        store.start_run(model="m", prompt="go", history=(), config={}, run_id=run_id)
        store.release(run_id)

    def matching(prefix: str) -> list[str]:
        return [r.id for r in store.runs_with_prefix(prefix, limit=len(ids))]

    assert matching("nightly:") == ["nightly:q1"]
    assert matching("a_b:") == ["a_b:1"]
    assert matching("50%") == ["50%:1"]
    assert matching("") == sorted(ids)


def test_a_duplicate_id_fails_that_run_alone(store: RunLog) -> None:
    agent = Agent(ScriptedModel(["first", "second", "third"]), store=store)
    agent.run_sync("one", run_id="same")
    with pytest.raises(ConfigError, match="already in"):
        agent.run_sync("two", run_id="same")
    assert agent.run_sync("three", run_id="other").output == "second"
    assert store.run("same").prompt == "one"
    assert store.run("other").status == "answered"


def test_if_exists_resume_and_return_give_a_finished_run_back_without_the_model(
    store: RunLog,
) -> None:
    model = ScriptedModel(["the answer"])
    first = Agent(model, store=store).run_sync("q", run_id="r1")
    for mode in ("resume", "return"):
        again = Agent(ScriptedModel([]), store=store).run_sync("q", run_id="r1", if_exists=mode)
        assert (again.output, again.run_id, again.messages) == (
            first.output, "r1", first.messages,
        )  # fmt: skip
    # "resume" of an id the log does not have starts that run.
    fresh = Agent(ScriptedModel(["new"]), store=store).run_sync(
        "q", run_id="r2", if_exists="resume"
    )
    assert (fresh.output, store.run("r2").status) == ("new", "answered")


def test_if_exists_resume_goes_on_with_an_unfinished_run(store: RunLog) -> None:
    store.start_run(model="m", prompt="go", history=(), config={}, run_id="half")
    store.flush()
    store.release("half")  # as if its process had died
    with pytest.raises(ConfigError, match="has not finished"):
        Agent("test", store=store).run_sync("go", run_id="half", if_exists="return")
    result = Agent(ScriptedModel(["finished now"]), store=store).run_sync(
        "go", run_id="half", if_exists="resume"
    )
    assert result.output == "finished now"


def test_results_land_in_call_order_whatever_order_they_finish_in(store: RunLog) -> None:
    gates = [threading.Event() for _ in range(3)]

    @tool
    def wait_turn(n: int) -> str:
        """Finishes after the call after it."""
        if n < 2:
            gates[n + 1].wait(10)
        gates[n].set()
        return f"done {n}"

    reply = AssistantMessage(
        tool_calls=tuple(ToolCall(f"w{n}", "wait_turn", f'{{"n": {n}}}') for n in range(3))
    )
    result = Agent(ScriptedModel([reply, "ok"]), tools=[wait_turn], store=store).run_sync("go")
    assert result.run_id is not None
    finished = [e for e in store.events(result.run_id) if e.kind == "tool_finished"]
    assert [e.data["call"]["id"] for e in finished] == ["w0", "w1", "w2"]
    reply_seq = next(e.seq for e in store.events(result.run_id) if e.data.get("index") == 1)
    assert [e.seq for e in finished] == [reply_seq + 1, reply_seq + 2, reply_seq + 3]


def test_writing_the_same_rows_again_changes_nothing(store: RunLog) -> None:
    result = Agent(ScriptedModel([calls("x"), "done"]), tools=[shout], store=store).run_sync("go")
    assert result.run_id is not None
    lines = list(store.to_jsonl(result.run_id))
    record = store.recorder(result.run_id, next_seq=0)  # replays every event from the start
    from steadyloop.events import MessageAdded

    for index, message in enumerate(result.messages):
        record(MessageAdded(index, message))
    store.flush()
    assert list(store.to_jsonl(result.run_id)) == lines
    assert store.from_jsonl(lines) == result.run_id  # its own export: a no-op


def test_export_and_import_between_stores(
    store: RunLog, tmp_path_factory: pytest.TempPathFactory
) -> None:
    result = Agent(ScriptedModel([calls("a"), "done"]), tools=[shout], store=store).run_sync("go")
    assert result.run_id is not None
    other = open_store(tmp_path_factory.mktemp("other") / "runs.db")
    lines = list(store.to_jsonl(result.run_id))
    assert other.from_jsonl(lines) == result.run_id
    assert other.messages(result.run_id) == result.messages
    other.close()


async def test_a_live_run_is_not_resumed_under_it(store_url: str) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def pay() -> str:
        """Pays."""
        started.set()
        await release.wait()
        return "paid"

    agent = Agent(
        ScriptedModel([AssistantMessage(tool_calls=(ToolCall("p", "pay", "{}"),)), "done"]),
        tools=[pay], store=store_url,
    )  # fmt: skip
    task = asyncio.create_task(agent.run("pay", run_id="live"))
    await started.wait()
    other = Agent("test", store=store_url)
    with pytest.raises(ConfigError, match="still running"):
        await other.resume("live")
    release.set()
    assert (await task).output == "done"
    await agent.aclose()
    await other.aclose()


def test_results_of_a_run_read_back_through_another_store_object(store_url: str) -> None:
    writer = Agent(ScriptedModel([calls("a", "b"), "done"]), tools=[shout], store=store_url)
    result = writer.run_sync("go", run_id="shared")
    writer.close_store()
    reader = open_store(store_url, read_only=True)
    assert reader.messages("shared") == result.messages
    assert {r.call.id: r.output for r in reader.tool_records("shared").values()} == {
        "c0": "A", "c1": "B",
    }  # fmt: skip
    assert isinstance(reader.messages("shared")[2], ToolResult)
    reader.close()
