"""The real server-everything: its resources and prompts read as steadyloop values, the
`read_resource` tool, elicitation answered by handlers (or declined), progress as events."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcp_servers.conftest import EVERYTHING
from mcp_servers.mcp_fixtures import package_main, tiny
from steadyloop import Agent, AssistantMessage, ToolCall, ToolResult, UserMessage
from steadyloop.errors import ConfigError, ToolError
from steadyloop.events import Event, ToolCallFinished, ToolProgress
from steadyloop.mcp import (
    Accept,
    Cancel,
    Decline,
    Elicitation,
    MCPServer,
    Prompt,
    PromptArgument,
    Resource,
)
from steadyloop.mcp.elicitation import ElicitHandler
from steadyloop.store import open_store
from steadyloop.testing import ScriptedModel

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

TEXT_URI = "demo://resource/dynamic/text/1"
BLOB_URI = "demo://resource/dynamic/blob/1"


def server(**options: Any) -> MCPServer:
    return MCPServer.stdio("node", str(package_main(EVERYTHING)), "stdio", **options)


@pytest.fixture
async def make(npm_servers: None) -> AsyncIterator[Any]:
    made: list[MCPServer] = []

    def build(**options: Any) -> MCPServer:
        made.append(server(**options))
        return made[-1]

    yield build
    for each in made:
        await each.aclose()


def call(name: str, arguments: str = "{}") -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall("c1", name, arguments),), stop_reason="tool_use")


async def one_call(srv: MCPServer, name: str, arguments: str = "{}") -> ToolResult:
    model = ScriptedModel([call(name, arguments), "done"])
    async with Agent(model, tools=[srv]) as agent:
        result = await agent.run("go")
    (answer,) = [m for m in result.messages if isinstance(m, ToolResult)]
    return answer


async def test_resources_are_listed_and_read_as_text_and_bytes(make: Any) -> None:
    srv = make()
    resources = await srv.list_resources()  # starts the server
    assert all(isinstance(r, Resource) for r in resources)
    docs = {r.uri: r for r in resources}
    (architecture,) = [r for r in docs.values() if r.name == "architecture.md"]
    assert architecture.mime_type == "text/markdown"
    templates = {t.name: t for t in await srv.list_resource_templates()}
    assert templates["Dynamic Text Resource"].uri_template == (
        "demo://resource/dynamic/text/{resourceId}"
    )
    text = await srv.read_resource(TEXT_URI)
    assert isinstance(text, str)
    assert "1" in text
    blob = await srv.read_resource(BLOB_URI)
    assert isinstance(blob, bytes)
    assert blob


async def test_an_unknown_uri_raises_the_servers_message(make: Any) -> None:
    srv = make()
    with pytest.raises(ToolError, match="demo://nothing/here"):
        await srv.read_resource("demo://nothing/here")


async def test_prompts_are_listed_and_filled_in_as_messages(make: Any) -> None:
    srv = make()
    prompts = {p.name: p for p in await srv.list_prompts()}
    args_prompt = prompts["args-prompt"]
    assert isinstance(args_prompt, Prompt)
    assert args_prompt.arguments[0] == PromptArgument("city", "Name of the city", True)
    assert args_prompt.arguments[1].required is False
    messages = await srv.get_prompt("args-prompt", {"city": "Paris"})
    assert isinstance(messages[0], UserMessage)
    assert "Paris" in messages[0].text
    # Usable as history.
    model = ScriptedModel(["noted"])
    async with Agent(model) as agent:
        await agent.run("and now?", history=messages)
    assert "Paris" in model.requests[0].messages[0].text  # type: ignore[union-attr]


async def test_a_prompt_with_an_embedded_resource_shows_it_as_text(make: Any) -> None:
    srv = make()
    messages = await srv.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": 1})
    texts = [m.text for m in messages if isinstance(m, UserMessage)]
    assert any(t.startswith(f"[resource <{TEXT_URI}>") for t in texts)


async def test_unknown_prompts_and_missing_arguments_raise_the_servers_message(
    make: Any,
) -> None:
    srv = make()
    with pytest.raises(ToolError, match="no-such-prompt"):
        await srv.get_prompt("no-such-prompt")
    with pytest.raises(ToolError, match="city"):
        await srv.get_prompt("args-prompt", {"state": "Texas"})


async def test_resources_as_tools_offers_one_read_tool(make: Any) -> None:
    srv = make(resources_as_tools=True, prefix="ev")
    tools = {t.name: t for t in await srv.tools()}
    reader = tools["ev_read_resource"]
    assert "architecture.md" in reader.description
    assert reader.parameters["required"] == ["uri"]
    text = await one_call(srv, "ev_read_resource", json.dumps({"uri": TEXT_URI}))
    assert not text.is_error
    assert "1" in text.content
    blob = await one_call(srv, "ev_read_resource", json.dumps({"uri": BLOB_URI}))
    assert blob.content.startswith(f"[binary resource <{BLOB_URI}>")
    missing = await one_call(srv, "ev_read_resource", '{"uri": "demo://nothing/here"}')
    assert missing.is_error
    assert "demo://nothing/here" in missing.content


async def test_resources_stay_off_the_tool_list_by_default(make: Any) -> None:
    names = {t.name for t in await make().tools()}
    assert "read_resource" not in names


async def test_resources_as_tools_needs_the_resources_capability() -> None:
    srv = MCPServer.stdio(*tiny("serve"), resources_as_tools=True)
    with pytest.raises(ConfigError, match="offers no resources"):
        await srv.tools()
    await srv.aclose()


async def test_without_a_handler_elicitation_is_declined(make: Any) -> None:
    srv = make()
    assert "trigger-sampling-request" not in {t.name for t in await srv.tools()}
    answer = await one_call(srv, "trigger-elicitation-request")
    assert "decline" in answer.content.lower()


async def test_a_sync_handlers_answer_reaches_the_server(make: Any) -> None:
    asked: list[Elicitation] = []

    def fill(request: Elicitation) -> Accept:
        asked.append(request)
        required = request.schema.get("required", [])
        content = {
            name: _sample(field) for name, field in request.schema["properties"].items()
            if name in required
        }  # fmt: skip
        return Accept(content)

    srv = make(on_elicit=fill)
    answer = await one_call(srv, "trigger-elicitation-request")
    (request,) = asked
    assert request.mode == "form"
    assert request.url is None
    assert request.message
    assert srv.label == request.server
    assert "accept" in answer.content.lower()
    assert "Ada" in answer.content


def _sample(field: dict[str, Any]) -> Any:
    if "enum" in field:
        return field["enum"][0]
    return {"string": "Ada", "boolean": True, "integer": 3, "number": 3}[
        field.get("type", "string")
    ]


@pytest.mark.parametrize(("reply", "word"), [(Decline(), "decline"), (Cancel(), "cancel")])
async def test_an_async_handler_can_decline_or_cancel(
    make: Any, reply: Decline | Cancel, word: str
) -> None:
    async def answer(request: Elicitation) -> Decline | Cancel:
        await asyncio.sleep(0)
        return reply

    srv = make(on_elicit=answer)
    result = await one_call(srv, "trigger-elicitation-request")
    assert word in result.content.lower()


async def test_url_mode_hands_the_url_to_the_handler(make: Any) -> None:
    asked: list[Elicitation] = []

    async def open_page(request: Elicitation) -> Accept:
        asked.append(request)
        return Accept()

    srv = make(on_elicit=open_page)
    url = "https://example.com/connect"
    await one_call(srv, "trigger-url-elicitation", json.dumps({"url": url}))
    (request,) = asked
    assert request.mode == "url"
    assert request.url == url
    assert request.schema == {}


@pytest.mark.parametrize("handler", [lambda r: 1 / 0, lambda r: "yes"])
async def test_a_failing_handler_cancels_and_is_logged(
    make: Any, handler: ElicitHandler, caplog: pytest.LogCaptureFixture
) -> None:
    srv = make(on_elicit=handler)
    with caplog.at_level(logging.ERROR, logger="steadyloop.mcp"):
        result = await one_call(srv, "trigger-elicitation-request")
    assert "cancel" in result.content.lower()
    assert any(record.name == "steadyloop.mcp" for record in caplog.records)


async def test_progress_is_streamed_and_never_logged(make: Any, tmp_path: Any) -> None:
    srv = make()
    model = ScriptedModel(
        [call("trigger-long-running-operation", '{"duration": 1, "steps": 3}'), "done"]
    )
    events: list[Event] = []
    async with Agent(model, tools=[srv], store=tmp_path / "runs.db") as agent:
        result = await agent.run("wait", run_id="p1", on_event=events.append)
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [p.progress for p in progress] == [1, 2, 3]
    assert {p.total for p in progress} == {3}
    assert {p.call.id for p in progress} == {"c1"}
    finished = next(i for i, e in enumerate(events) if isinstance(e, ToolCallFinished))
    assert events.index(progress[-1]) < finished
    log = open_store(tmp_path / "runs.db")
    assert not [e for e in log.events("p1") if "progress" in e.kind]
    log.close()
    assert len(result.messages) == 4  # prompt, call, result, answer: nothing added
