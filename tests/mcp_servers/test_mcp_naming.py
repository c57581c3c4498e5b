"""Tool names and schemas providers accept (F25, F26); results rendered block by block (F29)."""

from __future__ import annotations

import re

from mcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

from steadyloop.mcp.results import render_result
from steadyloop.mcp.schema import input_schema, tool_names
from steadyloop.mcp.server import servers_from_cli
from steadyloop.models.wire import ToolNames

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_valid_names_are_kept_and_others_made_valid_unique_and_stable() -> None:
    names = ["search", "calendar.respond", "calendar_respond", "get weather", "a/b/c", "y" * 70]
    mapped = tool_names(names)
    assert mapped["search"] == "search"
    assert mapped["calendar_respond"] == "calendar_respond"
    assert mapped["get weather"] == "get_weather"
    assert mapped["a/b/c"] == "a_b_c"
    assert mapped["calendar.respond"] != "calendar_respond"
    assert all(VALID.match(n) for n in mapped.values())
    assert len(set(mapped.values())) == len(names)
    assert tool_names(list(reversed(names))) == mapped


def test_a_python_tool_and_an_mcp_tool_of_one_name_get_the_same_valid_name() -> None:
    """One rule for every tool: the model sees `get_weather` for a tool named `get weather`,
    whether an MCP server or a Python function provides it."""
    names = ["search", "calendar.respond", "calendar_respond", "get weather", "a/b/c", "y" * 70]
    from_mcp = tool_names(names)
    on_the_wire = ToolNames(names)
    assert {name: on_the_wire.to_wire(name) for name in names} == from_mcp
    assert on_the_wire.to_wire("get weather") == "get_weather"


def test_a_prefix_goes_before_every_name_and_keeps_them_valid() -> None:
    mapped = tool_names(["search", "z" * 64], prefix="docs")
    assert mapped["search"] == "docs_search"
    assert len(mapped["z" * 64]) == 64
    assert mapped["z" * 64].startswith("docs_zzz")


def test_schemas_lose_dollar_schema_and_always_have_object_properties() -> None:
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"a": {"type": "number"}},
        "required": ["a"],
    }
    assert input_schema(draft7) == {
        "type": "object",
        "properties": {"a": {"type": "number"}},
        "required": ["a"],
    }
    assert input_schema({}) == {"type": "object", "properties": {}}
    assert input_schema(None) == {"type": "object", "properties": {}}
    assert input_schema({"type": "object", "required": []}) == {"type": "object", "properties": {}}


def test_every_block_is_kept_in_order_and_structured_content_fills_in_for_no_text() -> None:
    result = CallToolResult(
        content=[
            TextContent(type="text", text="first"),
            ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
            AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///notes.txt", text="the notes"),
            ),
            TextContent(type="text", text="last"),
        ],
        is_error=False,
    )
    output = render_result(result)
    assert output.text.splitlines() == [
        "first",
        "[image 1: image/png, 8 bytes]",
        "[audio: audio/wav, 3 bytes; not shown]",
        "[resource <file:///notes.txt>]",
        "the notes",
        "last",
    ]
    assert [i.media_type for i in output.images] == ["image/png"]
    structured = render_result(CallToolResult(content=[], structured_content={"t": 21}))
    assert structured.text == '{"t":21}'
    assert not structured.is_error
    empty = render_result(CallToolResult(content=[], is_error=True))
    assert empty.is_error
    assert empty.text == "(the tool returned no output)"


def test_cli_options_become_servers() -> None:
    servers = servers_from_cli(["npx -y '@scope/server' --root '/a b'"], ["http://127.0.0.1:1/mcp"])
    assert [s.label for s in servers] == [
        "npx -y @scope/server --root '/a b'",
        "http://127.0.0.1:1/mcp",
    ]
