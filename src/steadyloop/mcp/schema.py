"""MCP tool names and input schemas in a form every provider accepts.

MCP allows tool names that OpenAI and Anthropic reject (dots, spaces, slashes, more than 64
characters), and a tool's `inputSchema` may carry `$schema`, lack `properties`, or be empty.
`tool_names` picks a valid, unique name for each MCP tool, the same one every time the server
lists the same tools, by the rule every adapter applies to Python tools' names;
`input_schema` cleans a schema without changing what it accepts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from steadyloop.models.wire import valid_tool_names

__all__ = ["input_schema", "tool_names"]


def tool_names(names: Sequence[str], prefix: str | None = None) -> dict[str, str]:
    """Maps each MCP tool name to the name the model sees: `prefix_name` with a prefix, made
    valid by `valid_tool_names`."""
    full = {name: f"{prefix}_{name}" if prefix else name for name in names}
    valid = valid_tool_names(full.values())
    return {name: valid[prefixed] for name, prefixed in full.items()}


def input_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of an MCP `inputSchema` that providers accept as function parameters.

    Drops the top-level `$schema` and `$id` (several providers reject them), and makes the
    root an object with `properties`: an empty or missing schema means "no arguments".
    """
    cleaned = {k: v for k, v in (schema or {}).items() if k not in ("$schema", "$id")}
    cleaned["type"] = "object"
    if not isinstance(cleaned.get("properties"), Mapping):
        cleaned["properties"] = {}
    required = cleaned.get("required")
    if required is not None and not (isinstance(required, list) and required):
        del cleaned["required"]
    return cleaned
