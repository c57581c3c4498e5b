"""Runs recorded responses through the adapters' parsers, exactly as the live path does."""

from __future__ import annotations

from openai_cassettes import Interaction

from steadyloop.messages import AssistantMessage
from steadyloop.models.openai_chat import ChatStreamParser, parse_chat_completion
from steadyloop.models.openai_errors import KeyHint, error_from_body
from steadyloop.models.openai_responses import ResponsesStreamParser, parse_response
from steadyloop.models.wire import ToolNames

HINT = KeyHint()


def tool_names(interaction: Interaction) -> ToolNames:
    names = []
    for tool in interaction.request.get("tools") or ():
        names.append(tool.get("name") or tool["function"]["name"])
    return ToolNames(names)


def parse_chat(interaction: Interaction) -> AssistantMessage:
    """The canonical reply (or the raised error) for a recorded Chat Completions response."""
    names = tool_names(interaction)
    if interaction.status >= 400:
        raise error_from_body(
            interaction.body,
            status=interaction.status,
            provider="openai:test",
            hint=HINT,
            headers=interaction.headers,
        )
    if not interaction.is_stream:
        return parse_chat_completion(interaction.json(), names, "openai:test", HINT)
    parser = ChatStreamParser(names, "openai:test", HINT)
    for chunk in interaction.sse_data():
        parser.feed(chunk)
    return parser.finish()


def parse_responses(interaction: Interaction) -> AssistantMessage:
    """The canonical reply (or the raised error) for a recorded Responses API response."""
    names = tool_names(interaction)
    if interaction.status >= 400:
        raise error_from_body(
            interaction.body,
            status=interaction.status,
            provider="openai-responses:test",
            hint=HINT,
            headers=interaction.headers,
        )
    if not interaction.is_stream:
        return parse_response(interaction.json(), names, "openai-responses:test", HINT)
    parser = ResponsesStreamParser(names, "openai-responses:test", HINT)
    for event in parser_events(interaction):
        parser.feed(event)
    return parser.finish()


def parser_events(interaction: Interaction) -> list[dict[str, object]]:
    return interaction.sse_data()
