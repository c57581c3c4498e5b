"""The run log: what is recorded, how it reads back, and how it survives bad input."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from steadyloop import Agent, AssistantMessage, Limits, ToolCall, ToolResult, UserMessage, tool
from steadyloop.errors import ConfigError, TurnLimitExceeded
from steadyloop.retry import Backoff
from steadyloop.store import SCHEMA_VERSION, RunStore
from steadyloop.store.ids import find_run
from steadyloop.testing import ScriptedModel


@tool
def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper() * 50


def call(call_id: str, name: str, arguments: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(call_id, name, arguments),))


def test_every_event_is_logged_with_untruncated_output(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "log.db")
    model = ScriptedModel([call("a", "shout", '{"text": "hey"}'), "done"])
    result = Agent(model, tools=[shout], max_tool_output=20, store=store).run_sync("go")
    assert result.run_id is not None
    kinds = [e.kind for e in store.events(result.run_id)]
    # the result's own message row is left out: its tool_finished row holds it
    assert kinds == [
        "message", "model_request", "message", "tool_finished", "model_request", "message",
        "finished",
    ]  # fmt: skip
    (record,) = store.tool_records(result.run_id).values()
    assert record.output == "HEY" * 50
    assert len(record.result.content) < len(record.output)
    assert "[130 characters omitted]" in record.result.content
    assert store.messages(result.run_id) == result.messages
    info = store.run(result.run_id)
    assert (info.status, info.stop_reason, info.usage.requests) == ("answered", "end_turn", 2)


def test_history_is_logged_first(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "log.db")
    history = (UserMessage("before"), AssistantMessage("earlier answer"))
    result = Agent(ScriptedModel(["now"]), store=store).run_sync("again", history=history)
    assert result.run_id is not None
    assert store.messages(result.run_id) == result.messages
    assert store.run(result.run_id).history == 2


def test_limit_stop_is_logged(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "log.db")
    agent = Agent(
        ScriptedModel([call(str(i), "shout", '{"text": "x"}') for i in range(3)]),
        tools=[shout], limits=Limits(max_turns=2), store=store,
    )  # fmt: skip
    with pytest.raises(TurnLimitExceeded) as info:
        agent.run_sync("go")
    run_id = info.value.result.run_id
    assert run_id is not None
    run = store.run(run_id)
    assert (run.status, run.stop_reason) == ("limit", "turn_limit")
    assert [e.data["reason"] for e in store.events(run_id) if e.kind == "limit"] == ["turn_limit"]


def test_an_error_is_logged_with_its_reason(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "log.db")
    agent = Agent(
        ScriptedModel([RuntimeError("provider exploded")]), store=store, backoff=Backoff.none()
    )
    with pytest.raises(RuntimeError):
        agent.run_sync("go")
    (run,) = store.runs()
    assert run.status == "error"
    assert run.error == "RuntimeError: provider exploded"


async def test_cancelled_mid_tool_leaves_a_valid_resumable_log(tmp_path: Path) -> None:
    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Never returns."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    store = RunStore(tmp_path / "log.db")
    agent = Agent(ScriptedModel([call("w", "wait_forever", "{}")]), tools=[wait_forever],
                  store=store)  # fmt: skip
    task = asyncio.create_task(agent.run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (run,) = store.runs()
    assert run.status == "interrupted"
    # The call's outcome is unknown, so the log leaves it open for `resume` to settle.
    messages = store.messages(run.id)
    assert isinstance(messages[-1], AssistantMessage)
    assert [c.id for c in messages[-1].tool_calls] == ["w"]
    agent.model = ScriptedModel(["after"])
    resumed = await agent.resume(run.id)
    (answer,) = [m for m in resumed.messages if isinstance(m, ToolResult)]
    assert answer.is_error
    assert answer.content.startswith("interrupted")


def test_jsonl_round_trip_is_loss_free(tmp_path: Path) -> None:
    first = RunStore(tmp_path / "a.db")
    model = ScriptedModel([call("a", "shout", '{"text": "hey"}'), "done"])
    run_id = Agent(model, tools=[shout], store=first).run_sync("go").run_id
    assert run_id is not None
    lines = list(first.to_jsonl(run_id))
    second = RunStore(tmp_path / "b.db")
    assert second.from_jsonl(lines) == run_id
    assert list(second.to_jsonl(run_id)) == lines
    assert second.events(run_id) == first.events(run_id)
    # Importing the same export again changes nothing; another run under that id is refused.
    assert second.from_jsonl(lines) == run_id
    assert list(second.to_jsonl(run_id)) == lines
    changed = [lines[0], *(line.replace("HEY", "HOY") for line in lines[1:])]
    with pytest.raises(ConfigError, match=r"already in .* with other contents"):
        second.from_jsonl(changed)
    assert list(second.to_jsonl(run_id)) == lines


def test_not_an_export(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a steadyloop run export"):
        RunStore(tmp_path / "a.db").from_jsonl(['{"type": "event"}'])


def test_schema_is_versioned(tmp_path: Path) -> None:
    RunStore(tmp_path / "log.db").close()
    with sqlite3.connect(tmp_path / "log.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(ConfigError, match="newer than this steadyloop understands"):
        RunStore(tmp_path / "log.db")


def test_corrupt_file_is_a_config_error_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    path.write_bytes(b"garbage" * 1000)
    with pytest.raises(ConfigError, match="cannot open the run log"):
        RunStore(path)
    assert path.read_bytes() == b"garbage" * 1000


def test_the_api_finds_runs_by_their_whole_id_and_the_cli_by_a_generated_ids_prefix(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "log.db")
    generated = ("abcd1" + "0" * 27, "abcd2" + "0" * 27)
    for run_id in (*generated, "t1", "t10"):
        store.start_run(model="m", prompt="p", history=(), config={}, run_id=run_id)
    store.flush()
    assert store.run("t1").id == "t1"
    with pytest.raises(ConfigError, match="no run"):
        store.run("abcd1")  # the API never guesses from a prefix
    assert find_run(store, "abcd1").id == generated[0]
    assert find_run(store, "t1").id == "t1"
    with pytest.raises(ConfigError, match="ambiguous"):
        find_run(store, "abcd")
    with pytest.raises(ConfigError, match="no run 't'"):
        find_run(store, "t")  # caller-given ids are matched whole
    with pytest.raises(ConfigError, match="no run"):
        find_run(store, "%")


@pytest.mark.parametrize(
    "replies",
    [
        # parallel calls with an error and an unknown tool, then an answer
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall("a", "shout", '{"text": "x"}'),
                    ToolCall("b", "nope", "{}"),
                    ToolCall("c", "shout", "{bad json"),
                )
            ),
            "done",
        ],
        # a reply cut off mid-call: answered without running, then an answer
        [
            AssistantMessage(
                tool_calls=(ToolCall("a", "shout", '{"te'),), stop_reason="max_tokens"
            ),
            "done",
        ],
        # two turns, duplicate ids repaired by the loop
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall("x", "shout", '{"text": "1"}'),
                    ToolCall("x", "shout", '{"text": "2"}'),
                )
            ),
            AssistantMessage(tool_calls=(ToolCall("x", "shout", '{"text": "3"}'),)),
            "done",
        ],
    ],
)
def test_the_logged_transcript_is_the_runs_transcript(
    tmp_path: Path, replies: list[AssistantMessage | str]
) -> None:
    store = RunStore(tmp_path / "log.db")
    history = (UserMessage("earlier"), AssistantMessage("answer"))
    result = Agent(ScriptedModel(replies), tools=[shout], store=store).run_sync(
        "go", history=history
    )
    assert result.run_id is not None
    assert store.messages(result.run_id) == result.messages
