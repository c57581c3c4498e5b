"""An MCP server's resources and prompts, read-only, as steadyloop's own values.

`MCPServer.list_resources()`, `list_resource_templates()`, `read_resource(uri)`, `list_prompts()`
and `get_prompt(name, arguments)` return the frozen dataclasses here (never the SDK's types):
a resource's text as `str`, a blob as `bytes`, a prompt as messages usable as `history=`.
`read_tool_description` and `render_resource` serve the one read-only tool `resources_as_tools=True`
adds (MCP makes resources the application's to choose: the model gets them only when the
application says so).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from steadyloop.media import Image
from steadyloop.messages import AssistantMessage, Message, UserMessage, user_message
from steadyloop.tools import NO_OUTPUT_TEXT, ToolOutput

if TYPE_CHECKING:
    import mcp.types

__all__ = [
    "READ_RESOURCE",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "prompt_messages",
    "read_tool_description",
    "render_resource",
    "resource_contents",
]

READ_RESOURCE = "read_resource"
_LISTED = 50  # resources named in the tool's description


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource a server lists: its `uri`, `name`, and what it says about it."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None

    @classmethod
    def from_mcp(cls, resource: mcp.types.Resource) -> Resource:
        return cls(
            str(resource.uri), resource.name, resource.title, resource.description,
            resource.mime_type,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ResourceTemplate:
    """A family of resources, `uri_template` an RFC 6570 template (`demo://item/{id}`)."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None

    @classmethod
    def from_mcp(cls, template: mcp.types.ResourceTemplate) -> ResourceTemplate:
        return cls(
            template.uri_template, template.name, template.title, template.description,
            template.mime_type,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a prompt (its value is sent as text)."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt template a server offers; `get_prompt(name, arguments)` fills it in."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()

    @classmethod
    def from_mcp(cls, prompt: mcp.types.Prompt) -> Prompt:
        arguments = tuple(
            PromptArgument(a.name, a.description, bool(a.required)) for a in prompt.arguments or ()
        )
        return cls(prompt.name, prompt.title, prompt.description, arguments)


def resource_contents(result: mcp.types.ReadResourceResult) -> str | bytes | list[str | bytes]:
    """A resource's text as `str`, a blob's decoded bytes; a list when it has several parts."""
    from mcp.types import TextResourceContents

    parts: list[str | bytes] = [
        part.text if isinstance(part, TextResourceContents) else base64.b64decode(part.blob)
        for part in result.contents
    ]
    return parts[0] if len(parts) == 1 else parts


def prompt_messages(result: mcp.types.GetPromptResult) -> tuple[Message, ...]:
    """One message per prompt message, in order: a user's text, image or embedded resource; an
    assistant's text."""
    from mcp.types import ImageContent, TextContent

    from steadyloop.mcp.results import block_text

    messages: list[Message] = []
    for message in result.messages:
        block = message.content
        if message.role == "assistant":
            text = block.text if isinstance(block, TextContent) else block_text(block)
            messages.append(AssistantMessage(text))
        elif isinstance(block, ImageContent):
            messages.append(user_message([Image(block.mime_type, block.data)]))
        else:
            text = block.text if isinstance(block, TextContent) else block_text(block)
            messages.append(UserMessage(text))
    return tuple(messages)


def render_resource(result: mcp.types.ReadResourceResult) -> ToolOutput:
    """A read resource as the model reads it: text as text, images as image parts, other
    blobs as a one-line note."""
    from mcp.types import TextResourceContents

    parts: list[str] = []
    images: list[Image] = []
    for part in result.contents:
        mime = part.mime_type or "application/octet-stream"
        if isinstance(part, TextResourceContents):
            parts.append(part.text)
        elif mime.startswith("image/"):
            images.append(Image(mime, part.blob))
            parts.append(f"[image {len(images)}: {mime}, resource <{part.uri}>]")
        else:
            size = len(base64.b64decode(part.blob))
            parts.append(f"[binary resource <{part.uri}> ({mime}): {size} bytes; not shown]")
    return ToolOutput("\n".join(parts) if parts else NO_OUTPUT_TEXT, tuple(images))


def read_tool_description(label: str, resources: Sequence[Resource]) -> str:
    """What the model is told of the `read_resource` tool: the resources listed now (URI,
    name, description), at most 50."""
    lines = [f"Reads a resource of the MCP server {label} by its URI. Its resources:"]
    for resource in resources[:_LISTED]:
        about = f": {resource.description}" if resource.description else ""
        lines.append(f"- {resource.uri} ({resource.name}){about}")
    if len(resources) > _LISTED:
        lines.append(f"… and {len(resources) - _LISTED} more")
    if not resources:
        lines.append("(none listed)")
    return "\n".join(lines)
