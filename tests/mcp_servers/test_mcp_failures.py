"""Servers that fail: at start-up, mid-call, by hanging, or with protocol errors (F28, F43)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from mcp_servers.mcp_fixtures import LONG_NAME, tiny
from steadyloop import Agent, AssistantMessage, ConfigError, Message, ToolCall, ToolResult, tool
from steadyloop.mcp import MCPServer
from steadyloop.mcp.results import render_result
from steadyloop.testing import ScriptedModel

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def calls(*items: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(items)),
        stop_reason="tool_use",
    )


def answers(messages: Sequence[Message]) -> list[ToolResult]:
    return [m for m in messages if isinstance(m, ToolResult)]


@tool
def local_add(a: int, b: int) -> int:
    """Adds two numbers, in Python."""
    return a + b


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (MCPServer.stdio(*tiny("exit")), "refusing to start (exit mode)"),
        (MCPServer.stdio("/nonexistent/mcp-server", "--flag"), "command not found"),
    ],
    ids=["exits-at-once", "missing-binary"],
)
async def test_a_server_that_cannot_start_is_a_config_error_before_the_model_is_called(
    server: MCPServer, expected: str
) -> None:
    model = ScriptedModel(["never sent"])
    started = time.monotonic()
    async with Agent(model, tools=[server, local_add]) as agent:
        with pytest.raises(ConfigError, match="failed to start") as caught:
            await agent.run("go")
    assert expected in str(caught.value)
    assert server.label.split()[0] in str(caught.value)
    assert model.requests == []
    assert time.monotonic() - started < 10


async def test_garbage_on_stdout_fails_within_the_start_timeout() -> None:
    server = MCPServer.stdio(*tiny("garbage"), start_timeout=1)
    model = ScriptedModel(["never sent"])
    async with Agent(model, tools=[server]) as agent:
        with pytest.raises(ConfigError, match=r"no answer to `initialize` within 1s") as caught:
            await agent.run("go")
    assert "tiny: printing garbage" in str(caught.value)
    assert model.requests == []


async def test_a_server_dying_mid_call_answers_with_errors_and_other_tools_still_work() -> None:
    server = MCPServer.stdio(*tiny("serve"))
    model = ScriptedModel(
        [
            calls(("die", "{}"), ("local_add", '{"a": 1, "b": 2}')),
            calls(("ok", "{}"), ("local_add", '{"a": 3, "b": 4}')),
            "done",
        ]
    )
    async with Agent(model, tools=[server, local_add]) as agent:
        result = await agent.run("go")
    died, added, after, added_again = answers(result.messages)
    assert died.is_error
    assert "stopped (connection closed) while die ran" in died.content
    assert "tiny: dying on purpose" in died.content  # its stderr, for the user
    assert added.content == "3"
    assert after.is_error
    assert "stopped" in after.content
    assert added_again.content == "7"


async def test_the_next_run_restarts_a_server_that_died() -> None:
    server = MCPServer.stdio(*tiny("serve"))
    async with Agent(ScriptedModel([calls(("die", "{}")), "done"]), tools=[server]) as agent:
        await agent.run("go")
        agent.model = ScriptedModel([calls(("ok", '{"n": 1}')), "done"])
        result = await agent.run("again")
    assert answers(result.messages)[0].content == 'ok: {"n": 1}'


async def test_a_hanging_call_is_ended_by_the_timeout_and_the_session_goes_on() -> None:
    server = MCPServer.stdio(*tiny("serve"), timeout=0.5)
    model = ScriptedModel([calls(("hang", "{}"), ("ok", "{}")), calls(("ok", "{}")), "done"])
    async with Agent(model, tools=[server]) as agent:
        result = await agent.run("go")
    hung, ok, ok_again = answers(result.messages)
    assert hung.is_error
    assert hung.content == "hang timed out after 0.5s"
    assert ok.content == ok_again.content == "ok: {}"


async def test_a_json_rpc_error_is_an_error_result() -> None:
    server = MCPServer.stdio(*tiny("serve"))
    model = ScriptedModel([calls(("protocol-error", "{}")), "done"])
    async with Agent(model, tools=[server]) as agent:
        result = await agent.run("go")
    answer = answers(result.messages)[0]
    assert answer.is_error
    assert answer.content == "MCP error -32603: tiny: internal failure"


async def test_names_providers_reject_are_mapped_and_calls_reach_the_right_tool() -> None:
    server = MCPServer.stdio(*tiny("serve"))
    async with server:
        names = {t.remote_name: t.name for t in await server.tools()}
    assert names["calendar_respond"] == "calendar_respond"
    assert names["calendar.respond"].startswith("calendar_respond_")
    assert names["get weather"] == "get_weather"
    assert len(names[LONG_NAME]) == 64
    assert len(set(names.values())) == len(names)
    for name in names.values():
        assert name.replace("_", "").replace("-", "").isalnum()
        assert len(name) <= 64
    model = ScriptedModel(
        [calls((names["calendar.respond"], '{"x": 1}'), (names["get weather"], "{}")), "done"]
    )
    async with Agent(model, tools=[server]) as agent:
        result = await agent.run("go")
    dotted, spaced = answers(result.messages)
    assert dotted.content == 'calendar.respond: {"x": 1}'
    assert spaced.content == "get weather: {}"
    # The same listing maps to the same names on the next start.
    async with server:
        again = {t.remote_name: t.name for t in await server.tools()}
    assert again == names


async def test_two_servers_with_the_same_tool_names_are_told_apart_by_prefix() -> None:
    first = MCPServer.stdio(*tiny("serve"), prefix="one", include={"ok"})
    second = MCPServer.stdio(*tiny("serve"), prefix="two", include={"ok"})
    model = ScriptedModel([calls(("one_ok", '{"n": 1}'), ("two_ok", '{"n": 2}')), "done"])
    async with Agent(model, tools=[first, second]) as agent:
        result = await agent.run("go")
    assert [a.content for a in answers(result.messages)] == ['ok: {"n": 1}', 'ok: {"n": 2}']


async def test_two_servers_with_clashing_names_and_no_prefix_is_a_config_error() -> None:
    first = MCPServer.stdio(*tiny("serve"), include={"ok"})
    second = MCPServer.stdio(*tiny("serve"), include={"ok"})
    async with Agent(ScriptedModel(["x"]), tools=[first, second]) as agent:
        with pytest.raises(ConfigError, match="'ok'"):
            await agent.run("go")


async def test_a_failed_run_leaves_no_server_behind_after_aclose() -> None:
    server = MCPServer.stdio(*tiny("stubborn"))
    from steadyloop import ModelError

    model = ScriptedModel([calls(("ok", "{}")), ModelError("provider down")])
    agent = Agent(model, tools=[server], model_retries=0)
    with pytest.raises(ModelError):
        await agent.run("go")
    await agent.aclose()


def test_run_sync_twice_restarts_the_server_in_each_event_loop() -> None:
    server = MCPServer.stdio(*tiny("serve"))
    agent = Agent(
        ScriptedModel(
            [calls(("ok", '{"run": 1}')), "first", calls(("ok", '{"run": 2}')), "second"]
        ),
        tools=[server],
    )
    first = agent.run_sync("one")
    second = agent.run_sync("two")
    assert answers(first.messages)[0].content == 'ok: {"run": 1}'
    assert answers(second.messages)[-1].content == 'ok: {"run": 2}'
    import asyncio

    asyncio.run(agent.aclose())


async def test_including_a_tool_the_server_lacks_is_a_config_error_naming_its_tools() -> None:
    server = MCPServer.stdio(*tiny("serve"), include={"ok", "okay"})
    async with Agent(ScriptedModel(["x"]), tools=[server]) as agent:
        with pytest.raises(ConfigError, match="no tool named 'okay'") as caught:
            await agent.run("go")
    assert "calendar.respond, calendar_respond, die" in str(caught.value)


async def test_a_stdio_server_gets_its_cwd_and_env_but_not_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINY_SECRET", "from our environment")
    server = MCPServer.stdio(*tiny("serve"), env={"TINY_GREETING": "hello"}, cwd=tmp_path)
    async with server:
        where = next(t for t in await server.tools() if t.name == "where")
        assert where.parameters == {"type": "object", "properties": {}}
        result = render_result(await server.call("where", {}))
    assert json.loads(result.text) == {
        "cwd": str(tmp_path),
        "TINY_GREETING": "hello",
        "TINY_SECRET": None,
    }
