"""The seam between the loop and a model: one request in, one canonical reply out.

A `ModelRequest` is a serialisable value (instructions, the model's view of the transcript, the
tool specs); a reply is an `AssistantMessage`. Adapters translate both to and from their wire
format and map their vendor's exceptions to steadyloop's errors; nothing provider-specific
crosses this line.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass

from steadyloop.cache import Cache
from steadyloop.events import TextDelta, ToolCallDelta
from steadyloop.messages import AssistantMessage, Message
from steadyloop.tools import ToolSpec

__all__ = ["Model", "ModelRequest", "StreamPart"]

StreamPart = TextDelta | ToolCallDelta | AssistantMessage


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs: the system prompt, the messages, the tools.

    `cache` is what the agent asks providers to cache (None: no cache controls, as for a
    compaction summary); `cache_key` the resolved OpenAI `prompt_cache_key` (None: none sent).
    """

    instructions: str | None
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    cache: Cache | None = None
    cache_key: str | None = None


class Model(ABC):
    """A model the agent can call. Subclasses implement `request`; streaming ones `stream` too.

    `name` identifies the model in logs and results (a spec string like "openai:gpt-4.1-mini").
    """

    name: str = "model"

    @abstractmethod
    async def request(self, request: ModelRequest) -> AssistantMessage:
        """Makes one call and returns the reply; raises `ModelError` (or a subclass) on failure."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        """Yields text and tool-call deltas as they arrive, then the whole reply, last.

        The default makes a plain request and yields its text as one delta.
        """
        reply = await self.request(request)
        if reply.text:
            yield TextDelta(reply.text)
        yield reply

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most models hold nothing
        """Releases connections; the default has none."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
