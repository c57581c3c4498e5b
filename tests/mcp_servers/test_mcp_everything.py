"""An agent using the real server-everything over stdio: listing, calls, results, timeouts."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from steadyloop import Agent, AssistantMessage, Message, ToolCall, ToolResult
from steadyloop.events import RunFinished, ToolCallFinished, ToolCallStarted
from steadyloop.mcp import MCPServer
from steadyloop.mcp.results import render_result
from steadyloop.testing import FunctionModel, ScriptedModel
from steadyloop.tools import ToolSpec

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def results_of(messages: Sequence[Message]) -> dict[str, ToolResult]:
    return {m.call_id: m for m in messages if isinstance(m, ToolResult)}


def calls(*items: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(items)),
        stop_reason="tool_use",
    )


async def run_calls(
    server: MCPServer, *items: tuple[str, str], **agent_options: float
) -> dict[str, ToolResult]:
    """One agent run whose model makes `items` calls at once, then stops; results by call id."""
    model = ScriptedModel([calls(*items), "done"])
    async with Agent(model, tools=[server], **agent_options) as agent:  # type: ignore[arg-type]
        result = await agent.run("go")
    return results_of(result.messages)


async def test_lists_the_servers_tools_with_schemas_providers_accept(everything: MCPServer) -> None:
    tools = {t.name: t for t in await everything.tools()}
    assert {"echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"} <= set(tools)
    get_sum = tools["get-sum"].parameters
    assert "$schema" not in get_sum
    assert get_sum["type"] == "object"
    assert set(get_sum["properties"]) == {"a", "b"}
    assert get_sum["required"] == ["a", "b"]
    for tool in tools.values():
        assert tool.parameters["type"] == "object"
        assert isinstance(tool.parameters["properties"], dict)
        assert tool.description


async def test_agent_run_calls_get_sum_and_echo_in_parallel(everything: MCPServer) -> None:
    seen: list[Sequence[ToolSpec]] = []

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        seen.append(tools)
        results = [m for m in messages if isinstance(m, ToolResult)]
        if not results:
            return calls(("get-sum", '{"a": 2, "b": 3}'), ("echo", '{"message": "hi"}'))
        return AssistantMessage(" | ".join(r.content for r in results), stop_reason="end_turn")

    async with Agent(FunctionModel(reply), tools=[everything]) as agent:
        events = [event async for event in agent.stream("add and echo")]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert "get-sum" in {t.name for t in seen[0]}
    assert "The sum of 2 and 3 is 5" in finished.result.output
    assert "Echo: hi" in finished.result.output
    tool_events = [e for e in events if isinstance(e, ToolCallStarted | ToolCallFinished)]
    # Both calls were under way before either was answered.
    assert [type(e) for e in tool_events[:2]] == [ToolCallStarted, ToolCallStarted]
    assert all(not e.result.is_error for e in tool_events if isinstance(e, ToolCallFinished))


async def test_bad_arguments_come_back_as_the_servers_error(everything: MCPServer) -> None:
    results = await run_calls(everything, ("get-sum", '{"a": "two"}'))
    assert results["c0"].is_error
    assert "Invalid arguments for tool get-sum" in results["c0"].content


async def test_a_tool_the_server_does_not_have_is_an_error_result(everything: MCPServer) -> None:
    results = await run_calls(everything, ("no-such-tool", "{}"), ("echo", '{"message": "x"}'))
    assert results["c0"].is_error
    assert "unknown tool 'no-such-tool'" in results["c0"].content
    assert "get-sum" in results["c0"].content
    assert not results["c1"].is_error
    await everything.tools()
    direct = render_result(await everything.call("no-such-tool", {}))
    assert direct.is_error
    assert "Tool no-such-tool not found" in direct.text


async def test_a_call_longer_than_the_server_timeout_is_ended(npm_servers: None) -> None:
    from mcp_servers.mcp_fixtures import package_main

    main = str(package_main("@modelcontextprotocol/server-everything"))
    server = MCPServer.stdio("node", main, "stdio", timeout=1)
    started = time.monotonic()
    results = await run_calls(
        server,
        ("trigger-long-running-operation", '{"duration": 30, "steps": 3}'),
        ("echo", '{"message": "still here"}'),
    )
    assert results["c0"].is_error
    assert "timed out after 1s" in results["c0"].content
    assert results["c1"].content == "Echo: still here"
    assert time.monotonic() - started < 15


async def test_the_agents_tool_timeout_applies_when_the_server_sets_none(
    everything: MCPServer,
) -> None:
    model = ScriptedModel(
        [
            calls(("trigger-long-running-operation", '{"duration": 30, "steps": 3}')),
            calls(("echo", '{"message": "after the timeout"}')),
            "done",
        ]
    )
    async with Agent(model, tools=[everything], tool_timeout=1) as agent:
        result = await agent.run("go")
    answers = [m for m in result.messages if isinstance(m, ToolResult)]
    assert "timed out after 1s" in answers[0].content
    # The session outlives a cancelled call.
    assert answers[1].content == "Echo: after the timeout"


async def test_tiny_image_comes_back_as_text_and_an_image(everything: MCPServer) -> None:
    results = await run_calls(everything, ("get-tiny-image", "{}"))
    answer = results["c0"]
    assert not answer.is_error
    assert len(answer.images) == 1
    assert answer.images[0].media_type == "image/png"
    assert answer.images[0].data.startswith("iVBOR")  # base64 of the PNG signature
    lines = answer.content.splitlines()
    image_line = next(i for i, line in enumerate(lines) if line.startswith("[image 1: image/png"))
    assert 0 < image_line < len(lines) - 1  # text before and after it, in the server's order


async def test_resource_links_embedded_resources_and_structured_content_are_kept(
    everything: MCPServer,
) -> None:
    results = await run_calls(
        everything,
        ("get-resource-links", '{"count": 2}'),
        ("get-structured-content", '{"location": "Chicago"}'),
        ("get-resource-reference", '{"resourceType": "Text", "resourceId": 1}'),
    )
    links = results["c0"].content.splitlines()
    assert len([line for line in links if line.startswith("[resource link: ")]) == 2
    assert "demo://resource/dynamic/" in results["c0"].content
    assert '"temperature"' in results["c1"].content
    embedded = results["c2"].content.splitlines()
    assert any(line.startswith("[resource <demo://resource/") for line in embedded)


async def test_async_with_starts_and_stops_the_server(everything: MCPServer) -> None:
    async with everything as server:
        result = await server.call("get-sum", {"a": 1, "b": 41})
    assert "42" in result.content[0].text  # type: ignore[union-attr]
    assert "stopped" in repr(everything)
