"""Prompt caching: what an agent asks providers to cache, checked before anything is sent.

An agent loop sends the same prefix (instructions, tools, the conversation so far) again on every
turn; providers that cache it charge a fraction for the part they read back. `Cache` says what
to mark: Anthropic gets `cache_control` breakpoints (on the fixed prefix and on the latest user
turns), OpenAI a `prompt_cache_key` that routes an agent's requests to the same cache. Everything
the API would refuse (more than four breakpoints, a one-hour mark after a five-minute one in wire
order, a key that is empty or too long) is a `ConfigError` when the `Cache` is made.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from steadyloop.errors import ConfigError

if TYPE_CHECKING:
    from steadyloop.tools import ToolSpec

__all__ = ["Cache", "Ttl", "cache_key", "resolve_cache"]

Ttl = Literal["5m", "1h"]
TTLS: tuple[str, ...] = ("5m", "1h")
MAX_BREAKPOINTS = 4  # Anthropic: "A maximum of 4 blocks with cache_control may be provided."
MAX_KEY_LENGTH = 64  # OpenAI: prompt_cache_key is at most 64 characters
_KEY_PREFIX = "steadyloop-"


@dataclass(frozen=True, slots=True)
class Cache:
    """What to ask the provider to cache.

    Args:
        prefix: a breakpoint at the end of the fixed prefix (the last system block, or the last
            tool when there are no instructions): True takes `ttl`; "5m" or "1h" set its own;
            False puts none.
        messages: breakpoints on the last block of each of this many latest user turns (the
            prompt or tool results), 0 to 4; with `prefix` at most 4 in all.
        ttl: how long the provider keeps a breakpoint: "5m" or "1h" (Anthropic).
        key: OpenAI's `prompt_cache_key`: "auto" derives one from the agent's model,
            instructions and tools, so every run of the agent (and of agents built alike)
            shares it; a string of your own (1 to 64 characters) is sent as given; None sends
            none.
    """

    prefix: bool | Ttl = True
    messages: int = 1
    ttl: Ttl = "5m"
    key: str | None = "auto"

    def __post_init__(self) -> None:
        if self.ttl not in TTLS:
            raise ConfigError(f'Cache(ttl=...) is "5m" or "1h", got {self.ttl!r}')
        if not isinstance(self.prefix, bool) and self.prefix not in TTLS:
            raise ConfigError(
                f'Cache(prefix=...) is True, False, "5m" or "1h", got {self.prefix!r}'
            )
        if isinstance(self.messages, bool) or not isinstance(self.messages, int):
            raise ConfigError(
                f"Cache(messages=...) is a number of user turns, got {self.messages!r}"
            )
        if self.messages < 0:
            raise ConfigError(f"Cache(messages=...) must be >= 0, got {self.messages}")
        marks = self.messages + (1 if self.prefix_ttl else 0)
        if marks > MAX_BREAKPOINTS:
            raise ConfigError(
                f"Cache(prefix={self.prefix!r}, messages={self.messages}) asks for {marks} cache "
                f"breakpoints and Anthropic takes at most {MAX_BREAKPOINTS}: lower messages= "
                "or set prefix=False"
            )
        if self.prefix_ttl == "5m" and self.messages and self.ttl == "1h":
            raise ConfigError(
                'Cache(prefix="5m", ttl="1h") puts a 1h breakpoint after a 5m one, which '
                'Anthropic refuses: give the prefix the longer ttl (prefix="1h", ttl="5m") '
                "or the same one"
            )
        if self.key is not None and (
            not isinstance(self.key, str) or not self.key.strip() or len(self.key) > MAX_KEY_LENGTH
        ):
            raise ConfigError(
                f"Cache(key=...) is 'auto', None or a string of 1 to {MAX_KEY_LENGTH} "
                f"characters, got {self.key!r:.80}"
            )

    @property
    def prefix_ttl(self) -> Ttl | None:
        """The ttl of the prefix breakpoint, or None when there is none."""
        if self.prefix is True:
            return self.ttl
        return self.prefix or None


def resolve_cache(cache: object) -> Cache | None:
    """`Agent(cache=...)` as a `Cache`: True is the default `Cache()`, False is None."""
    if cache is True:
        return Cache()
    if cache is False:
        return None
    if isinstance(cache, Cache):
        return cache
    raise ConfigError(f"cache= is True, False or a steadyloop.Cache(...), got {cache!r:.80}")


def cache_key(
    cache: Cache | None, model: str, instructions: object, tools: Iterable[ToolSpec]
) -> str | None:
    """The `prompt_cache_key` requests of an agent carry, or None.

    "auto" is a digest of the model name, the instructions (a callable by its qualified name,
    as its text may change per run) and each tool's name, description and schema: the same for
    every run of that agent and of agents built alike, in any process; other instructions or
    tools give another key.
    """
    if cache is None or cache.key is None:
        return None
    if cache.key != "auto":
        return cache.key
    described: str | None = instructions if isinstance(instructions, str) else None
    if callable(instructions):
        name = getattr(instructions, "__qualname__", type(instructions).__qualname__)
        described = f"{getattr(instructions, '__module__', '')}.{name}"
    specs = tuple(tools)
    # Every run of an agent offers the same spec objects: their digest is made once. The
    # entry holds the specs, so their ids cannot be taken by other objects while it exists.
    memo = (model, described, *map(id, specs))
    known = _AUTO_KEYS.get(memo)
    if known is not None:
        return known[1]
    parts = {
        "model": model,
        "instructions": described,
        "tools": [[s.name, s.description, s.parameters] for s in specs],
    }
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    key = (_KEY_PREFIX + hashlib.sha256(text.encode()).hexdigest())[:MAX_KEY_LENGTH]
    if len(_AUTO_KEYS) >= _MAX_AUTO_KEYS:
        del _AUTO_KEYS[next(iter(_AUTO_KEYS))]  # the oldest
    _AUTO_KEYS[memo] = (specs, key)
    return key


# "auto" keys made so far, by model, instructions and the identity of each tool spec.
_AUTO_KEYS: dict[tuple[object, ...], tuple[tuple[ToolSpec, ...], str]] = {}
_MAX_AUTO_KEYS = 256
