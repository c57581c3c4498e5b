"""What every model request of a run offers besides its messages: the system prompt, the
tools' specs, what those two add to the context, and the prompt-cache key.

A run makes its offer as it starts, again once callable instructions have made the text, and
again when its toolsets' tools change; each request then carries the offer as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from steadyloop.cache import cache_key
from steadyloop.limits import estimate_fixed_tokens
from steadyloop.models.base import ModelRequest

if TYPE_CHECKING:
    from steadyloop.config import RunConfig
    from steadyloop.messages import Message
    from steadyloop.tools import Tool, ToolSpec

__all__ = ["Offer"]


@dataclass(slots=True)  # not frozen: one a run, and a frozen one is slower to make
class Offer:
    """`fixed_tokens`: the estimate of what the instructions and the specs add to every
    request; `cache_key`: the OpenAI `prompt_cache_key` (derived from the agent's own
    instructions, text or callable, so a made system prompt does not change it)."""

    instructions: str | None
    specs: tuple[ToolSpec, ...]
    fixed_tokens: int
    cache_key: str | None

    @classmethod
    def make(cls, config: RunConfig, instructions: str | None, tools: Sequence[Tool]) -> Offer:
        """The offer of `instructions` (the text; None for none) and `tools`."""
        specs = tuple(tool.spec for tool in tools)
        key = cache_key(config.cache, config.model.name, config.instructions, specs)
        return cls(instructions, specs, estimate_fixed_tokens(instructions, specs), key)

    def request(self, config: RunConfig, messages: tuple[Message, ...]) -> ModelRequest:
        """A request of `messages` with this offer and the agent's cache controls."""
        return ModelRequest(self.instructions, messages, self.specs, config.cache, self.cache_key)
