"""MCP tool names and input schemas in a form every provider accepts.

MCP allows tool names that OpenAI and Anthropic reject (dots, spaces, slashes, more than 64
characters), and a tool's `inputSchema` may carry `$schema`, lack `properties`, or be empty.
`tool_names` picks a valid, unique name for each MCP tool, the same one every time the server
lists the same tools; `input_schema` cleans a schema without changing what it accepts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MAX_NAME", "input_schema", "tool_names"]

MAX_NAME = 64
_VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]+")
_HASH = 8


def tool_names(names: Sequence[str], prefix: str | None = None) -> dict[str, str]:
    """Maps each MCP tool name to the name the model sees: valid, unique and stable.

    Names already valid are kept (after `prefix` and an underscore, when given). Others have
    their bad characters replaced by `_`; a name that is then too long, or that equals another
    tool's name, is shortened and given a hash of the original, so `a.b` and `a_b` stay apart.
    """
    wanted = {name: _clean(f"{prefix}_{name}" if prefix else name) for name in names}
    counts: dict[str, int] = {}
    for clean in wanted.values():
        counts[clean] = counts.get(clean, 0) + 1
    mapped: dict[str, str] = {}
    for name, clean in wanted.items():
        original = f"{prefix}_{name}" if prefix else name
        if len(clean) > MAX_NAME or (counts[clean] > 1 and clean != original):
            clean = f"{clean[: MAX_NAME - _HASH - 1]}_{_digest(original)}"
        mapped[name] = clean
    return mapped


def _clean(name: str) -> str:
    if _VALID.match(name):
        return name
    return _BAD_CHARS.sub("_", name).strip("_") or "tool"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH]


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
