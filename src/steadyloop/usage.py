"""Token, call and cost counts (`Usage`): per reply on `AssistantMessage.usage`, summed over a
run on `RunResult.usage`; unknown counts and costs stay unknown, never zero."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

from steadyloop.frozen import slot_setters

__all__ = ["Tally", "Usage"]


@dataclass(frozen=True, slots=True, init=False)
class Usage:
    """Token and call counts: per reply on `AssistantMessage.usage`, summed on `RunResult.usage`.

    `tool_calls` counts every dispatched call, failed ones included. The cache fields are what
    providers report as read from / written to their prompt cache (a part of `input_tokens`).
    `cost_usd` is what the tokens cost in US dollars, None when the price is unknown (a model
    the price tables do not list, the fakes). A sum adds the known costs and stays None only
    when none is known, so an unknown cost never reads as free.

    `unreported` counts the requests whose reply came without token counts (a server that
    ignores `stream_options.include_usage`, the fakes): their tokens are missing from the
    counts, which are then a lower bound, or unknown when no reply reported any
    (`tokens_known`, `total_tokens`). `cost_usd` and `unreported` are keyword-only.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    tool_calls: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    _: KW_ONLY
    cost_usd: float | None = None
    unreported: int = 0

    def __init__(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        requests: int = 0,
        tool_calls: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        *,
        cost_usd: float | None = None,
        unreported: int = 0,
    ) -> None:
        # One is made for every reply and every sum: its slots are set directly (see
        # `steadyloop.frozen`).
        (
            set_input,
            set_output,
            set_requests,
            set_calls,
            set_read,
            set_write,
            set_cost,
            set_unreported,
        ) = _USAGE_SLOTS
        set_input(self, input_tokens)
        set_output(self, output_tokens)
        set_requests(self, requests)
        set_calls(self, tool_calls)
        set_read(self, cache_read_tokens)
        set_write(self, cache_write_tokens)
        set_cost(self, cost_usd)
        set_unreported(self, unreported)

    @property
    def tokens_known(self) -> bool:
        """True when every request's reply reported its tokens (or there was none)."""
        return self.unreported == 0

    @property
    def total_tokens(self) -> int | None:
        """Tokens sent and received; None when no request's reply reported them."""
        if self.requests and self.unreported >= self.requests:
            return None
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        # Field by field, without a loop: a run adds usages several times a turn.
        cost = self.cost_usd
        if other.cost_usd is not None:
            cost = other.cost_usd if cost is None else cost + other.cost_usd
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
            self.tool_calls + other.tool_calls,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=cost,
            unreported=self.unreported + other.unreported,
        )

    def to_dict(self) -> dict[str, int | float | None]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "requests": self.requests,
            "tool_calls": self.tool_calls,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": self.cost_usd,
            "unreported": self.unreported,
        }

    def as_json(self) -> dict[str, int | float | None]:
        """The usage for JSON output (`run --json`, `show --json`, batch rows): `total_tokens`
        is added, and it and the token counts are null when no reply reported its tokens
        (unknown is not zero)."""
        out = self.to_dict()
        total = self.total_tokens
        if total is None:
            for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
                out[key] = None
        out["total_tokens"] = total
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """Reads `to_dict()`'s form; older logs have no `cost_usd` (unknown) nor
        `unreported` (0)."""
        cost = data.get("cost_usd")
        counts = {
            k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__ and k != "cost_usd"
        }
        return cls(**counts, cost_usd=float(cost) if cost is not None else None)


_USAGE_SLOTS = slot_setters(Usage)


class Tally:
    """`Usage`s being added up (a run's, as it goes): each `add` changes the counts in place, as
    `Usage.__add__` would sum them, instead of making a `Usage` each time; `total()` is the
    sum, made once after each change. The counts can be read as they are (`cost_usd`)."""

    __slots__ = (
        "_total",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "input_tokens",
        "output_tokens",
        "requests",
        "tool_calls",
        "unreported",
    )

    def __init__(self, start: Usage) -> None:
        self.input_tokens = start.input_tokens
        self.output_tokens = start.output_tokens
        self.requests = start.requests
        self.tool_calls = start.tool_calls
        self.cache_read_tokens = start.cache_read_tokens
        self.cache_write_tokens = start.cache_write_tokens
        self.cost_usd = start.cost_usd
        self.unreported = start.unreported
        self._total: Usage | None = start

    def add(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.requests += usage.requests
        self.tool_calls += usage.tool_calls
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        if usage.cost_usd is not None:
            cost = self.cost_usd
            self.cost_usd = usage.cost_usd if cost is None else cost + usage.cost_usd
        self.unreported += usage.unreported
        self._total = None

    def add_calls(self, count: int) -> None:
        """Counts `count` more dispatched tool calls."""
        self.tool_calls += count
        self._total = None

    def total(self) -> Usage:
        """The sum so far."""
        total = self._total
        if total is None:
            total = self._total = Usage(
                self.input_tokens,
                self.output_tokens,
                self.requests,
                self.tool_calls,
                self.cache_read_tokens,
                self.cache_write_tokens,
                cost_usd=self.cost_usd,
                unreported=self.unreported,
            )
        return total
