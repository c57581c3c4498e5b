"""A server whose tool list changes mid-run (an SDK server sending `tools/list_changed`): the next
model request offers the new list, a `ToolsChanged` event and a `tools_changed` row say so,
`show` prints it, the transcript is untouched, and a replay with recorded tools matches."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from mcp_servers.mcp_fixtures import HERE
from steadyloop import Agent, AssistantMessage, Message, ToolCall, ToolResult, tool
from steadyloop.cli.live import PlainView
from steadyloop.events import (
    Event,
    ModelRequestStarted,
    ToolCallFinished,
    ToolProgress,
    ToolsChanged,
)
from steadyloop.mcp import MCPServer
from steadyloop.models.base import ModelRequest
from steadyloop.replay import replay_run
from steadyloop.store import open_store
from steadyloop.testing import ScriptedModel
from support.cli import run_cli

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

CHANGING = str(HERE / "changing_server.py")


@pytest.fixture
async def changing() -> AsyncIterator[MCPServer]:
    server = MCPServer.stdio(sys.executable, CHANGING, prefix="srv")
    yield server
    await server.aclose()


def call(name: str, arguments: str = "{}", call_id: str = "c1") -> AssistantMessage:
    return AssistantMessage(
        tool_calls=(ToolCall(call_id, name, arguments),), stop_reason="tool_use"
    )


def offered(request: ModelRequest) -> set[str]:
    return {tool.name for tool in request.tools}


def results(messages: Sequence[Message]) -> list[ToolResult]:
    return [m for m in messages if isinstance(m, ToolResult)]


async def test_a_tool_added_mid_run_is_offered_at_the_next_request(
    changing: MCPServer, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [
            call("srv_unlock", call_id="c1"),
            call("srv_vault", '{"code": "1234"}', call_id="c2"),
            "opened",
        ]
    )
    events: list[Event] = []
    async with Agent(model, tools=[changing], store=tmp_path / "runs.db") as agent:
        result = await agent.run("open the vault", run_id="r1", on_event=events.append)
    assert "srv_vault" not in offered(model.requests[0])
    assert "srv_vault" in offered(model.requests[1])
    assert results(result.messages)[1].content == "the vault opened with 1234"
    # The event comes after the unlocking call finished and before the next request.
    kinds = [
        type(e)
        for e in events
        if isinstance(e, ToolCallFinished | ToolsChanged | ModelRequestStarted)
    ]
    assert kinds[:4] == [ModelRequestStarted, ToolCallFinished, ToolsChanged, ModelRequestStarted]
    (change,) = [e for e in events if isinstance(e, ToolsChanged)]
    assert change.added == ("srv_vault",)
    assert change.removed == ()
    assert change.changed == ()
    assert set(change.tools) == {
        "srv_unlock",
        "srv_lock",
        "srv_reword",
        "srv_nudge",
        "srv_slow",
        "srv_vault",
    }
    assert sys.executable in change.source
    # Nothing was added to the transcript: the user's prompt, three replies, two results.
    assert [m.type for m in result.messages] == [
        "user", "assistant", "tool_result", "assistant", "tool_result", "assistant",
    ]  # fmt: skip

    log = open_store(tmp_path / "runs.db")
    rows = [e for e in log.events("r1") if e.kind == "tools_changed"]
    assert [row.data["added"] for row in rows] == [["srv_vault"]]
    assert log.run("r1").config["tools"].count("srv_vault") == 0  # the list it started with
    log.close()


async def test_show_prints_the_change_and_a_recorded_replay_matches(
    changing: MCPServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    model = ScriptedModel(
        [call("srv_unlock"), call("srv_vault", '{"code": "7"}', call_id="c2"), "opened"]
    )
    async with Agent(model, tools=[changing], store=store) as agent:
        await agent.run("open it", run_id="r2")

    code, out, _ = run_cli(capsys, "show", "r2", "--store", str(store))
    assert code == 0
    assert f"tools changed ({changing.label}): added srv_vault" in out

    log = open_store(store)
    report = await replay_run(log, "r2", recorded_tools=True)
    log.close()
    assert report.divergence is None


async def test_a_removed_tool_gets_the_unknown_tool_text(changing: MCPServer) -> None:
    model = ScriptedModel(
        [
            call("srv_unlock", call_id="c1"),
            call("srv_lock", call_id="c2"),
            call("srv_vault", '{"code": "1"}', call_id="c3"),
            "gone",
        ]
    )
    changes: list[ToolsChanged] = []
    async with Agent(model, tools=[changing]) as agent:
        result = await agent.run(
            "try", on_event=lambda e: changes.append(e) if isinstance(e, ToolsChanged) else None
        )
    assert [c.removed for c in changes] == [(), ("srv_vault",)]
    answer = results(result.messages)[2]
    assert answer.is_error
    assert "srv_vault" in answer.content
    assert "srv_lock" in answer.content
    assert "srv_vault" not in offered(model.requests[3])


async def test_a_new_description_is_a_change_and_an_unchanged_list_is_none(
    changing: MCPServer,
) -> None:
    model = ScriptedModel(
        [call("srv_unlock", call_id="c1"), call("srv_nudge", call_id="c2"),
         call("srv_reword", call_id="c3"), "done"]
    )  # fmt: skip
    changes: list[ToolsChanged] = []
    async with Agent(model, tools=[changing]) as agent:
        await agent.run(
            "go", on_event=lambda e: changes.append(e) if isinstance(e, ToolsChanged) else None
        )
    assert [(c.added, c.changed) for c in changes] == [(("srv_vault",), ()), ((), ("srv_vault",))]
    (vault,) = [t for t in model.requests[3].tools if t.name == "srv_vault"]
    assert vault.description == "Opens the big vault with a code."


async def test_a_change_one_run_caused_reaches_another_run_of_the_agent(
    changing: MCPServer,
) -> None:
    first = ScriptedModel([call("srv_unlock"), "unlocked"])
    async with Agent(first, tools=[changing]) as agent:
        await agent.run("unlock")
        second = ScriptedModel([call("srv_nudge"), "ok"])
        agent.model = second
        await agent.run("again")
    assert "srv_vault" in offered(second.requests[0])


async def test_progress_notifications_become_events_of_the_call(changing: MCPServer) -> None:
    model = ScriptedModel([call("srv_slow"), "done"])
    events: list[Event] = []
    async with Agent(model, tools=[changing]) as agent:
        await agent.run("slowly", on_event=events.append)
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [(p.progress, p.total, p.message) for p in progress] == [
        (1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3"),
    ]  # fmt: skip
    assert {p.call.id for p in progress} == {"c1"}
    finished = next(i for i, e in enumerate(events) if isinstance(e, ToolCallFinished))
    assert all(events.index(p) < finished for p in progress)


async def test_a_new_tool_named_like_another_tool_is_left_out(
    changing: MCPServer, caplog: pytest.LogCaptureFixture
) -> None:
    @tool(name="srv_vault")
    def own_vault(code: str) -> str:
        """The agent's own vault."""
        return f"own vault {code}"

    model = ScriptedModel(
        [call("srv_unlock"), call("srv_vault", '{"code": "9"}', call_id="c2"), "done"]
    )
    with caplog.at_level(logging.WARNING, logger="steadyloop.mcp"):
        async with Agent(model, tools=[changing, own_vault]) as agent:
            result = await agent.run("open")
    assert results(result.messages)[1].content == "own vault 9"
    assert any("srv_vault" in r.getMessage() for r in caplog.records if r.name == "steadyloop.mcp")


def test_the_plain_view_prints_progress_and_tool_changes() -> None:
    stream = io.StringIO()
    view = PlainView(stream)
    view.show(ToolProgress(ToolCall("c1", "copy", "{}"), 2, 3, "copying"))
    view.show(ToolsChanged("srv", ("a", "b"), ("c",), (), ("a", "b")))
    lines = stream.getvalue().splitlines()
    assert lines == ["  … copy 2/3 copying", "tools changed (srv): added a, b; removed c"]
