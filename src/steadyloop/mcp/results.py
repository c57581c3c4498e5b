"""MCP tool results as the model reads them: every content block, in order.

A `CallToolResult` holds a list of blocks (text, images, audio, resource links, embedded
resources), optional `structuredContent`, and `isError`. Dropping blocks loses answers (a linter
whose first block says "checked 3 files" and second lists the problems), so all are kept: text as
is, images as `Image` parts plus a line of text naming them (providers that cannot show images
still read that), links and resources as text. `structuredContent` is sent as JSON when the
server gave no text. `isError: true` becomes an error result, never an exception.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from steadyloop.messages import Image
from steadyloop.tools import NO_OUTPUT_TEXT, ToolOutput

if TYPE_CHECKING:
    from mcp.types import CallToolResult

__all__ = ["block_text", "render_result"]


def render_result(result: CallToolResult) -> ToolOutput:
    """The text and images of one MCP result; `is_error` as the server set it."""
    from mcp.types import ImageContent, TextContent

    parts: list[str] = []
    images: list[Image] = []
    has_text = False
    for block in result.content:
        if isinstance(block, TextContent):
            has_text = True
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            images.append(Image(block.mime_type, block.data))
            parts.append(f"[image {len(images)}: {block.mime_type}, {_size(block.data)}]")
        else:
            parts.append(block_text(block))
    structured = result.structured_content
    if structured is not None and not has_text:
        parts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    text = "\n".join(parts) if parts else NO_OUTPUT_TEXT
    return ToolOutput(text, tuple(images), bool(result.is_error))


def block_text(block: Any) -> str:
    """The line the model reads for a content block that is neither text nor an image (for an
    image: a note naming it)."""
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)}; not shown]"
    if isinstance(block, ResourceLink):
        return _link(block.name, block.uri, block.mime_type, block.description)
    if isinstance(block, EmbeddedResource):
        return _resource(block.resource)
    return f"[{getattr(block, 'type', 'unknown')} content: not shown]"


def _link(name: str, uri: Any, mime_type: str | None, description: str | None) -> str:
    line = f"[resource link: {name} <{uri}>"
    if mime_type:
        line += f" ({mime_type})"
    if description:
        line += f": {description}"
    return line + "]"


def _resource(resource: Any) -> str:
    mime = f" ({resource.mime_type})" if resource.mime_type else ""
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource <{resource.uri}>{mime}]\n{text}"
    return f"[resource <{resource.uri}>{mime}: {_size(resource.blob)} of binary data; not shown]"


def _size(data: str) -> str:
    """The decoded size of base64 `data`, for a note the model can read."""
    try:
        count = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return "undecodable data"
    return f"{count} bytes"
