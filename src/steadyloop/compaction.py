"""Opt-in compaction: when the context nears its limit, summarise the middle of the conversation.

The transcript is never edited: a `Summary` entry is appended and the model's view is derived
from it (head, `[N earlier messages summarised]` note, recent tail). Where the cut may fall is the
transcript's business; this module holds the settings and the default summariser, which asks the
agent's own model with a request that carries no tool blocks (some providers reject tool blocks
in a request without tool definitions).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from steadyloop.errors import ConfigError
from steadyloop.messages import (
    ArgumentsError,
    AssistantMessage,
    Message,
    Summary,
    ToolCall,
    ToolResult,
    UserMessage,
)
from steadyloop.models.base import Model, ModelRequest
from steadyloop.truncate import truncate

if TYPE_CHECKING:
    from steadyloop.transcript import Transcript

__all__ = ["Compaction", "Summariser", "render_for_summary", "summarise_with_model"]

Summariser = Callable[[Sequence[Message]], str | Awaitable[str]]

SUMMARY_INSTRUCTIONS = (
    "You compress an agent's working conversation. Write a factual summary that lets the agent "
    "continue: the user's goal, what was tried, what each tool call found (exact names, ids, "
    "numbers, paths), what failed and why, and what is left to do. No preamble."
)
_RESULT_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class Compaction:
    """When and how to compact.

    `keep_recent` messages stay verbatim (moved earlier so no call is split from its result);
    compaction runs before a model call when the estimated context exceeds
    `trigger * max_context_tokens`, and once when the provider says the context is too long.
    `summarise(messages) -> str` (sync or async) writes the summary; None asks the agent's model.
    """

    keep_recent: int = 6
    trigger: float = 0.8
    summarise: Summariser | None = None

    def __post_init__(self) -> None:
        if isinstance(self.keep_recent, bool) or self.keep_recent < 1:
            raise ConfigError(f"Compaction.keep_recent must be >= 1, got {self.keep_recent!r}")
        if not 0 < self.trigger <= 1:
            raise ConfigError(f"Compaction.trigger must be in (0, 1], got {self.trigger!r}")

    def due(self, tokens: int, max_context_tokens: int) -> bool:
        """Whether a context of `tokens` has passed the trigger."""
        return tokens > self.trigger * max_context_tokens

    async def summarise_older(
        self, transcript: Transcript, model: Model, max_chars: int
    ) -> tuple[Summary, AssistantMessage | None] | None:
        """The entry summarising all but the transcript's recent messages, and the model's
        reply when the model wrote the summary; None when nothing can be summarised."""
        cut = transcript.compaction_cut(self.keep_recent)
        if cut is None:
            return None
        messages = transcript.to_summarise(cut)
        reply = None
        if self.summarise is None:
            reply = await summarise_with_model(model, messages, max_chars)
            text = reply.text
        else:
            made = self.summarise(messages)
            text = str(await made if inspect.isawaitable(made) else made)
        return transcript.summary_for(cut, text), reply


async def summarise_with_model(
    model: Model, messages: Sequence[Message], max_chars: int
) -> AssistantMessage:
    """Asks `model` for a summary of `messages`, flattened to text and sent with no tools."""
    text = truncate(render_for_summary(messages), max_chars)
    request = ModelRequest(SUMMARY_INSTRUCTIONS, (UserMessage(text),), ())
    return await model.request(request)


def render_for_summary(messages: Sequence[Message]) -> str:
    """The messages as plain text; long tool results are cut to keep the request small."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"User: {message.text}")
        elif isinstance(message, Summary):
            lines.append(f"Earlier summary: {message.text}")
        elif isinstance(message, ToolResult):
            status = "error" if message.is_error else "result"
            content = truncate(message.content, _RESULT_CHARS)
            lines.append(f"Tool {status} ({message.name}, {message.call_id}): {content}")
        else:
            if message.text:
                lines.append(f"Assistant: {message.text}")
            for call in message.tool_calls:
                args = _arguments_text(call)
                lines.append(f"Assistant called {call.name} ({call.id}) with {args}")
    return "\n".join(lines)


def _arguments_text(call: ToolCall) -> str:
    """A call's arguments as JSON; text that is not a JSON object as the model sent it."""
    try:
        return call.arguments_json()
    except ArgumentsError:
        return str(call.arguments)
