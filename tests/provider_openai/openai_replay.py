"""Runs recorded responses through the adapters' parsers, exactly as the live path does.

Replies are parsed as made by `CHAT` or `RESPONSES` (one endpoint and model per API), so a
history rebuilt from a recording goes back to the same origin as its own replies."""

from __future__ import annotations

from provider_openai.openai_cassettes import Interaction
from steadyloop.messages import AssistantMessage
from steadyloop.models.openai_base import KeyHint, Origin, error_from_body
from steadyloop.models.openai_chat import ChatStreamParser, parse_chat_completion
from steadyloop.models.openai_responses import ResponsesStreamParser, parse_response
from steadyloop.models.wire import ToolNames

HINT = KeyHint()
CHAT = Origin("openai-chat", "https://recorded.example/v1", "recorded")
RESPONSES = Origin("openai-responses", "https://recorded.example/v1", "recorded")


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
        return parse_chat_completion(interaction.json(), names, "openai:test", HINT, CHAT)
    parser = ChatStreamParser(names, "openai:test", HINT, CHAT)
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
        return parse_response(interaction.json(), names, "openai-responses:test", HINT, RESPONSES)
    parser = ResponsesStreamParser(names, "openai-responses:test", HINT, RESPONSES)
    for event in parser_events(interaction):
        parser.feed(event)
    return parser.finish()


def parser_events(interaction: Interaction) -> list[dict[str, object]]:
    return interaction.sse_data()
