"""`steadyloop mcp serve` and `Agent.as_mcp_server`, reached by the official MCP Python client:
over stdio and streamable HTTP to the command in a process of its own, and in-process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import mcp
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from mcp_serve.agents import PARTIAL
from steadyloop import Agent, AssistantMessage, tool
from steadyloop.store import open_store
from support.processes import python_env, stop_pid

HERE = Path(__file__).parent
TOOLS = str(HERE / "shop_tools.py")


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


@asynccontextmanager
async def over_stdio(*args: str) -> AsyncIterator[ClientSession]:
    """A client session with `steadyloop mcp serve ARGS` started over stdio."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "steadyloop", "mcp", "serve", *args],
        env=python_env(),
    )  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture
def served_http(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`steadyloop mcp serve --agent mcp_serve.agents:never_done --http 0` in a process of its
    own: its URL (from the line it prints once it listens) and its run log. Stopped with
    SIGTERM by its PID, it must exit 0 (in order, its cleanup done)."""
    log = tmp_path / "runs.db"
    command = [
        sys.executable, "-m", "steadyloop", "mcp", "serve", "--agent",
        "mcp_serve.agents:never_done", "--http", "0", "--store", str(log),
    ]  # fmt: skip
    process = subprocess.Popen(command, env=python_env(), stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("serving MCP on http://127.0.0.1:"), line
        yield line.split()[-1], log
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stop_pid(process.pid)  # it did not stop on SIGTERM: the assertion below fails
            process.wait()
        assert process.stderr is not None
        with process.stderr:
            assert process.returncode == 0, process.stderr.read()  # stopped in order


async def test_stdio_serves_one_agent_tool_whose_call_is_a_logged_run(tmp_path: Path) -> None:
    log = tmp_path / "runs.db"
    reports: list[tuple[float, float | None]] = []

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total))

    async with over_stdio("--tools", TOOLS, "--model", "test", "--store", str(log)) as session:
        (listed,) = (await session.list_tools()).tools
        result = await session.call_tool("agent", {"prompt": "price of tea"}, None, heard)

    assert listed.name == "agent"
    assert listed.input_schema["required"] == ["prompt"]
    assert listed.input_schema["properties"]["prompt"]["type"] == "string"
    assert "add, price" in (listed.description or "")
    assert not result.is_error
    assert "price [ok]: example: 4.20 EUR" in text_of(result)  # the tool ran
    facts = result.structured_content
    assert facts is not None
    assert facts["stop_reason"] == "end_turn"
    assert facts["output"] == text_of(result)
    run = open_store(log, read_only=True).run(facts["run_id"])
    assert (run.status, run.prompt) == ("answered", "price of tea")
    assert [done for done, _ in reports] == [1, 2]  # one per model call, in order
    assert {total for _, total in reports} == {20}  # the default --max-turns


async def test_http_limit_stop_is_an_error_result_with_the_partial_answer(
    served_http: tuple[str, Path],
) -> None:
    url, log = served_http
    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as s:
        await s.initialize()
        result = await s.call_tool("agent", {"prompt": "compare tea prices"})

    assert result.is_error
    text = text_of(result)
    assert text.startswith("stopped: turn limit")
    assert f"partial answer:\n{PARTIAL}" in text
    facts = result.structured_content
    assert facts is not None
    assert facts["stop_reason"] == "turn_limit"
    run = open_store(log, read_only=True).run(facts["run_id"])
    assert (run.status, run.stop_reason) == ("limit", "turn_limit")


async def test_two_overlapping_http_calls_are_two_runs(served_http: tuple[str, Path]) -> None:
    url, log = served_http
    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as s:
        await s.initialize()
        results = await asyncio.gather(
            s.call_tool("agent", {"prompt": "first"}), s.call_tool("agent", {"prompt": "second"})
        )

    ids = [r.structured_content["run_id"] for r in results if r.structured_content]
    store = open_store(log, read_only=True)
    assert sorted(store.run(run_id).prompt for run_id in set(ids)) == ["first", "second"]


async def test_tools_only_lists_the_file_tools_and_answers_bad_arguments_as_text() -> None:
    async with over_stdio("--tools", TOOLS, "--tools-only") as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        good = await session.call_tool("add", {"a": 2, "b": 3})
        bad = await session.call_tool("add", {"a": "two", "b": 3})

    assert sorted(listed) == ["add", "price"]
    assert listed["add"].description == "Adds two whole numbers and returns the sum."
    assert listed["add"].input_schema["properties"]["a"]["type"] == "integer"
    assert sorted(listed["add"].input_schema["required"]) == ["a", "b"]
    assert (good.is_error, text_of(good)) == (False, "5")
    assert bad.is_error
    assert "- a: Input should be a valid integer" in text_of(bad)  # the field, as a model reads it


async def test_in_process_answer_text_is_the_run_output(tmp_path: Path) -> None:
    @tool
    def stock(item: str) -> int:
        """How many of an item are in stock."""
        return 7

    async with Agent("test", tools=[stock], store=tmp_path / "runs.db") as agent:
        async with mcp.Client(agent.as_mcp_server("shop")) as client:
            (listed,) = (await client.list_tools()).tools
            result = await client.call_tool("shop", {"prompt": "how many pens?"})
        facts = result.structured_content
        assert facts is not None
        assert agent.store is not None
        *_, answer = agent.store.messages(facts["run_id"])

    assert listed.name == "shop"
    assert isinstance(answer, AssistantMessage)
    assert text_of(result) == answer.text


async def test_in_process_paused_run_names_the_waiting_call_and_resume(tmp_path: Path) -> None:
    @tool(approve=True)
    def refund(order: str) -> str:
        """Refunds an order."""
        return "refunded"

    agent = Agent("test", tools=[refund], store=tmp_path / "runs.db")
    async with agent, mcp.Client(agent.as_mcp_server()) as client:
        result = await client.call_tool("agent", {"prompt": "refund order 7"})

    assert result.is_error
    facts = result.structured_content
    assert facts is not None
    assert facts["stop_reason"] == "approval"
    assert f"steadyloop resume {facts['run_id']} --approve" in text_of(result)


async def test_in_process_typed_answer_is_json_text_and_structured_output() -> None:
    @dataclass
    class Refund:
        order: str
        amount: float

    agent = Agent("test", output=Refund)
    async with agent, mcp.Client(agent.as_mcp_server()) as client:
        result = await client.call_tool("agent", {"prompt": "refund order 7"})

    facts = result.structured_content
    assert facts is not None
    assert isinstance(facts["output"], dict)
    assert set(facts["output"]) == {"order", "amount"}
    assert json.loads(text_of(result)) == facts["output"]
