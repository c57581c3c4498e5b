"""A cap on model calls per unit of time, shared by every run of a batch.

`Rate.parse("600/min")` reads a cap; a `TokenBucket` spends it: each model call reserves the next
token and waits until it is due, so the mean rate holds at the cap while a short burst (a tenth
of a second's worth) may go at once. On one machine the bucket lives in the batch's process; on
Ray it is one actor that every worker asks, so the cap is the whole cluster's. A provider's 429
and `Retry-After` are still honoured by the model's own retries: the cap keeps them rare.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from steadyloop.effects import Effects, ModelCall
from steadyloop.errors import ConfigError
from steadyloop.messages import AssistantMessage

__all__ = ["Rate", "RateLimited", "TokenBucket", "local_acquire"]

_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0,
          "h": 3600.0, "hour": 3600.0}  # fmt: skip
_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*/\s*([a-z]+?)s?\s*")


@dataclass(frozen=True, slots=True)
class Rate:
    """A cap of `per_second` model calls a second; `burst` of them may go at once."""

    per_second: float

    @classmethod
    def parse(cls, text: str) -> Rate:
        """`"600/min"`, `"10/s"`, `"36000/hour"`, ..."""
        match = _RATE.fullmatch(text.lower())
        if match is None or match.group(2) not in _UNITS or float(match.group(1)) <= 0:
            raise ConfigError(
                f"a rate limit is a positive count per unit, such as '600/min' or '10/s'; "
                f"got {text!r}"
            )
        return cls(float(match.group(1)) / _UNITS[match.group(2)])

    @property
    def burst(self) -> float:
        """How many calls may go at once: a tenth of a second's worth, at least one."""
        return max(1.0, self.per_second / 10)


class TokenBucket:
    """Hands out the tokens of `rate`: `reserve()` takes one and says how long to wait for it."""

    def __init__(self, rate: Rate, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self._clock = clock
        self._tokens = rate.burst
        self._at = clock()

    def reserve(self) -> float:
        """Takes the next token; returns the seconds until it is due (0: at once)."""
        now = self._clock()
        rate = self.rate
        self._tokens = min(rate.burst, self._tokens + (now - self._at) * rate.per_second)
        self._at = now
        self._tokens -= 1
        return max(0.0, -self._tokens / rate.per_second)


class RateLimited(Effects):
    """Makes each model call wait for `acquire()` (a token) first."""

    def __init__(self, acquire: Callable[[], Awaitable[None]]) -> None:
        self._acquire = acquire

    async def model_call(
        self, call: ModelCall, proceed: Callable[[], Awaitable[AssistantMessage]]
    ) -> AssistantMessage:
        await self._acquire()
        return await proceed()


def local_acquire(bucket: TokenBucket) -> Callable[[], Awaitable[None]]:
    """Waits for a token of a bucket in this process."""

    async def acquire() -> None:
        delay = bucket.reserve()
        if delay:
            await asyncio.sleep(delay)

    return acquire
