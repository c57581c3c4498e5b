"""The hard limits every run has, and the cheap token estimate.

Pure logic: the agent asks these before each model call (the repeat guard, after each batch of
tool results, is `steadyloop.repeats`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from steadyloop import texts
from steadyloop.errors import (
    ConfigError,
    ContextLimitExceeded,
    CostLimitExceeded,
    LimitExceeded,
    ToolCallLimitExceeded,
    TurnLimitExceeded,
)
from steadyloop.media import parts_tokens
from steadyloop.messages import (
    ArgumentsError,
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    UserMessage,
)

__all__ = ["CallBudget", "Limits", "TokenEstimator", "estimate_tokens"]

TokenEstimator = Callable[[Message], int]

_PER_MESSAGE_TOKENS = 4


@dataclass(frozen=True, slots=True)
class Limits:
    """Hard stops for a run; the counts must be positive ints (there is no "unlimited").

    `max_turns`: model calls in this run (history does not count).
    `max_context_tokens`: no request whose context would exceed this is ever sent.
    `max_repeats`: the same call (name and arguments) failing with the same error this many
    turns in a row stops the run.
    `max_same_results`: the same call returning the same successful result this many turns in
    a row (the first included, so at least 2) is answered with an error telling the model it
    already has that result; one more stops the run. None switches this off, for tools the
    model is meant to poll until their result changes.
    `max_cost_usd`: an optional limit (None: none). No model call starts once the run has
    cost this much (US dollars, from `Usage.cost_usd`); a run whose model has no known price
    cannot keep to it, so such a run does not start.
    `max_tool_calls`: optional (None: none); the run's calls of its tools (`final_answer` and
    calls refused by a tool's `max_calls` not counted). Calls past it are answered "not run",
    and once the reply's calls are answered the run stops with `ToolCallLimitExceeded`.
    """

    max_turns: int = 20
    max_context_tokens: int = 150_000
    max_repeats: int = 3
    max_cost_usd: float | None = None
    max_same_results: int | None = 3
    max_tool_calls: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_context_tokens", "max_repeats"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"Limits.{name} must be a positive int, got {value!r}; every run needs a "
                    "finite limit"
                )
        same = self.max_same_results
        if same is not None and (isinstance(same, bool) or not isinstance(same, int) or same < 2):
            raise ConfigError(
                f"Limits.max_same_results must be an int of at least 2 or None, got {same!r}: it "
                "counts the turns in a row that returned the same result, the first included, "
                "and the first result always reaches the model"
            )
        cost = self.max_cost_usd
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, int | float)
            or not math.isfinite(cost)
            or cost <= 0
        ):
            raise ConfigError(
                f"Limits.max_cost_usd must be a positive number of dollars or None, got {cost!r}"
            )
        calls = self.max_tool_calls
        if calls is not None and (
            isinstance(calls, bool) or not isinstance(calls, int) or calls < 1
        ):
            raise ConfigError(
                f"Limits.max_tool_calls must be a positive int or None, got {calls!r}"
            )


Stop = tuple[type[LimitExceeded], str]
"""A limit a run has reached: the error that stops it, and the message saying which."""


def reached_before_call(
    limits: Limits, turns: int, budget: CallBudget | None, cost: float | None
) -> Stop | None:
    """The call, turn or cost limit a run that has made `turns` model calls (with `budget`
    counting its tool calls, having cost `cost`) reaches before its next model call, if any."""
    if budget is not None and budget.exhausted:
        message = f"tool call limit reached: {limits.max_tool_calls} tool calls"
        return ToolCallLimitExceeded, message
    if turns >= limits.max_turns:
        return TurnLimitExceeded, f"turn limit reached: {limits.max_turns} model calls"
    return reached_cost(limits, cost)


def reached_cost(limits: Limits, cost: float | None) -> Stop | None:
    """The cost limit, when a run that has cost `cost` reached it."""
    limit = limits.max_cost_usd
    if limit is None or cost is None or cost < limit:
        return None
    return (
        CostLimitExceeded,
        f"cost limit reached: the run has cost ${cost:.4f}, max_cost_usd={limit:g}",
    )


def reached_context(limits: Limits, tokens: int) -> Stop | None:
    """The context limit, when a request of about `tokens` tokens would exceed it."""
    if tokens <= limits.max_context_tokens:
        return None
    return ContextLimitExceeded, (
        f"context limit reached: the next request needs about {tokens} tokens, "
        f"over max_context_tokens={limits.max_context_tokens}"
    )


class CallBudget:
    """One run's tool calls counted against each tool's `max_calls` and `Limits.max_tool_calls`.

    Calls are admitted in call order, across turns. A call past its tool's `max_calls` is
    refused and not counted; then a call past `max_tool_calls` is refused and the budget is
    `exhausted` (the run stops once the turn's calls are answered). Only the calls of the run's
    own tools count toward `max_tool_calls`, `final_answer` not among them (`counted`).
    """

    def __init__(
        self, max_calls: Mapping[str, int], max_tool_calls: int | None, counted: Collection[str]
    ) -> None:
        self._max_calls = dict(max_calls)
        self._max_tool_calls = max_tool_calls
        self._counted = frozenset(counted)
        self._by_tool: dict[str, int] = {}
        self._made = 0
        self.exhausted = False

    @classmethod
    def for_run(
        cls, max_calls: Mapping[str, int | None], limits: Limits, uncounted: str
    ) -> CallBudget | None:
        """The budget of a run whose tools have these `max_calls` (by name); None when nothing
        limits the calls (the loop then counts nothing)."""
        capped = {name: cap for name, cap in max_calls.items() if cap is not None}
        if not capped and limits.max_tool_calls is None:
            return None
        counted = [name for name in max_calls if name != uncounted]
        return cls(capped, limits.max_tool_calls, counted)

    def refusal(self, call: ToolCall) -> str | None:
        """Admits `call` and counts it (None), or says why it is not run (the text the model
        reads)."""
        name = call.name
        cap = self._max_calls.get(name)
        if cap is not None and self._by_tool.get(name, 0) >= cap:
            return texts.CALL_LIMIT.format(tool=name, times="once" if cap == 1 else f"{cap} times")
        if name in self._counted and self._max_tool_calls is not None:
            if self._made >= self._max_tool_calls:
                self.exhausted = True
                return texts.TOOL_CALL_LIMIT.format(limit=self._max_tool_calls)
            self._made += 1
        self._by_tool[name] = self._by_tool.get(name, 0) + 1
        return None

    def replay(self, messages: Sequence[Message], turns: int) -> dict[str, str]:
        """Counts the calls of a resumed run's own replies (the last `turns` of `messages`) as
        they were admitted when they were made (admission is deterministic, in call order); the
        refusals, by call id."""
        replies = [m for m in messages if isinstance(m, AssistantMessage)]
        refused: dict[str, str] = {}
        for reply in replies[max(0, len(replies) - turns) :] if turns else ():
            if reply.stop_reason == "max_tokens":
                continue  # calls cut off by the output limit were never dispatched
            for call in reply.tool_calls:
                if (text := self.refusal(call)) is not None:
                    refused[call.id] = text
        return refused


def estimate_tokens(message: Message) -> int:
    """The default estimate of what a message adds to the context, in tokens.

    It runs for every message appended, so ASCII text (the usual case) is measured inline.
    Images and documents count as a fixed estimate each (`steadyloop.media`), not as their
    base64 text.
    """
    if isinstance(message, ToolResult):
        text = message.content
        size = (len(text) if text.isascii() else _quarters(text)) + len(message.call_id)
        if message.images:
            size += 4 * parts_tokens(message.images)
    elif isinstance(message, AssistantMessage):
        text = message.text
        size = len(text) if text.isascii() else _quarters(text)
        for call in message.tool_calls:
            size += len(call.name) + len(call.id) + _quarters(_sent_arguments(call))
    elif isinstance(message, UserMessage):
        text = message.text
        size = len(text) if text.isascii() else _quarters(text)
        if message.parts:
            size += 4 * parts_tokens(message.parts)
    else:
        size = _quarters(message.note)
    return size // 4 + _PER_MESSAGE_TOKENS


def _sent_arguments(call: ToolCall) -> str:
    """A call's arguments as a request carries them: text that is not a JSON object goes to
    the provider as `{}` (the error result the model got quotes what it sent)."""
    try:
        return call.arguments_json()
    except ArgumentsError:
        return "{}"


def estimate_fixed_tokens(instructions: str | None, tool_specs: Sequence[Any]) -> int:
    """What the instructions and the tool definitions add to every request."""
    size = _quarters(instructions or "")
    for spec in tool_specs:
        known = _SPEC_SIZES.get(id(spec))
        size += known[1] if known is not None else _measure(spec)
    return size // 4


# Every run of an agent offers the same spec objects: each is measured once. An entry holds its
# spec, so the spec's id cannot be taken by another object while the entry exists.
_SPEC_SIZES: dict[int, tuple[Any, int]] = {}
_MAX_SPEC_SIZES = 1024


def _measure(spec: Any) -> int:
    """A tool spec's size in quarter tokens, remembered."""
    schema = json.dumps(spec.parameters)  # ASCII: other characters are escaped
    size = len(spec.name) + _quarters(spec.description) + len(schema)
    if len(_SPEC_SIZES) >= _MAX_SPEC_SIZES:
        _SPEC_SIZES.clear()
    _SPEC_SIZES[id(spec)] = (spec, size)
    return size


def _quarters(text: str) -> int:
    """The size of `text` in quarter tokens: an ASCII character is one, a UTF-8 byte of any
    other character two.

    Tokenizers fit about four ASCII characters in a token, but only about two bytes of other
    scripts: a CJK, Hangul, Devanagari or Thai character (three bytes) costs one to one and a
    half tokens, a Cyrillic or accented one (two bytes) about half to one. Counting characters
    alone undercounts such text up to fourfold. `isascii` is a flag check, so ASCII text costs
    no more than `len`.
    """
    if text.isascii():
        return len(text)
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars + 2 * (len(text.encode("utf-8", "surrogatepass")) - ascii_chars)
