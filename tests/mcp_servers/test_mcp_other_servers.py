"""server-filesystem, mcp-server-time and server-everything over streamable HTTP (F30, F44)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from mcp_servers.mcp_fixtures import MCP_SERVER_TIME, package_main
from steadyloop import Agent, AssistantMessage, Message, ToolCall, ToolResult
from steadyloop.mcp import MCPServer
from steadyloop.testing import ScriptedModel
from steadyloop.truncate import truncation_marker

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def calls(*items: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(items)),
        stop_reason="tool_use",
    )


def answers(messages: Sequence[Message]) -> list[ToolResult]:
    return [m for m in messages if isinstance(m, ToolResult)]


@pytest.fixture
def filesystem(npm_servers: None, tmp_path: Path) -> MCPServer:
    root = tmp_path / "root"
    root.mkdir()
    return MCPServer.stdio(
        "node", str(package_main("@modelcontextprotocol/server-filesystem")), str(root)
    )


async def test_reading_outside_the_allowed_root_is_an_error_result(
    filesystem: MCPServer, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the model")
    model = ScriptedModel([calls(("read_text_file", f'{{"path": "{secret}"}}')), "done"])
    async with Agent(model, tools=[filesystem]) as agent:
        result = await agent.run("read it")
    answer = answers(result.messages)[0]
    assert answer.is_error
    assert "Access denied" in answer.content
    assert "not for the model" not in answer.content


async def test_a_400_kb_file_is_cut_to_the_agents_limit_keeping_both_ends(
    filesystem: MCPServer, tmp_path: Path
) -> None:
    lines = [f"line {i:06d} " + "é" * 40 for i in range(8_000)]
    big = tmp_path / "root" / "big.txt"
    big.write_text("\n".join(lines), encoding="utf-8")
    assert big.stat().st_size > 400_000
    model = ScriptedModel([calls(("read_text_file", f'{{"path": "{big}"}}')), "done"])
    async with Agent(model, tools=[filesystem], max_tool_output=4_000) as agent:
        result = await agent.run("read it")
    answer = answers(result.messages)[0]
    assert not answer.is_error
    text = "\n".join(lines)
    assert answer.content == text[:2_000] + truncation_marker(len(text) - 4_000) + text[-2_000:]


async def test_convert_time_with_a_bad_time_is_an_error_result() -> None:
    server = MCPServer.stdio(str(MCP_SERVER_TIME), "--local-timezone", "UTC")
    arguments = '{"source_timezone": "UTC", "time": "25:99", "target_timezone": "Europe/Paris"}'
    good = arguments.replace("25:99", "12:30")
    model = ScriptedModel([calls(("convert_time", arguments), ("convert_time", good)), "done"])
    async with Agent(model, tools=[server]) as agent:
        result = await agent.run("convert")
    bad, fine = answers(result.messages)
    assert bad.is_error
    assert "Invalid time format" in bad.content
    assert not fine.is_error
    assert "Europe/Paris" in fine.content


async def test_server_everything_over_streamable_http(everything_http_url: str) -> None:
    server = MCPServer.http(everything_http_url, headers={"X-Test": "1"}, timeout=10)
    model = ScriptedModel(
        [calls(("get-sum", '{"a": 20, "b": 22}'), ("echo", '{"message": "over http"}')), "done"]
    )
    async with Agent(model, tools=[server]) as agent:
        result = await agent.run("go")
    total, echo = answers(result.messages)
    assert "42" in total.content
    assert echo.content == "Echo: over http"


async def test_an_http_server_nobody_listens_on_is_a_config_error() -> None:
    from mcp_servers.mcp_fixtures import free_port
    from steadyloop import ConfigError

    server = MCPServer.http(f"http://127.0.0.1:{free_port()}/mcp", start_timeout=5)
    with pytest.raises(ConfigError, match="failed to start"):
        await server.tools()
