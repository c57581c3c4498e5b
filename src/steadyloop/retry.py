"""Retries: the waits between attempts, a server's Retry-After, and the tools' retry loop.

`retry_context` (tenacity's) retries a block, for tools; a model call is retried after a
retryable `ModelError` by `steadyloop.modelcall`. Both wait what `Backoff` says, which tests
make zero. Neither logs: the loop reports each model retry as an event, dispatch counts tool
attempts into the result. (stamina, the friendlier wrapper around tenacity, logs every
scheduled retry through process-wide hooks, which Python prints to stderr when the application
has configured no logging; its hooks can only be changed for the whole process.)
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from steadyloop.errors import ConfigError, ModelError

if TYPE_CHECKING:
    from tenacity import AsyncRetrying, RetryCallState

__all__ = ["Backoff", "retry_after", "retry_context"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: `initial` seconds, doubling, capped at `maximum`, plus up to `jitter`.

    `Backoff.none()` waits zero seconds (for tests). A provider's Retry-After sets the wait, up
    to `longest_retry_after` seconds: a provider asking for longer (a quota that resets in an
    hour) fails the call at once with its own message rather than stall the run.
    """

    initial: float = 0.5
    maximum: float = 30.0
    jitter: float = 0.5
    longest_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if min(self.initial, self.maximum, self.jitter, self.longest_retry_after) < 0:
            raise ConfigError(f"Backoff values must be >= 0, got {self}")

    @classmethod
    def none(cls) -> Backoff:
        return cls(0.0, 0.0, 0.0)

    def worth_retrying(self, exc: BaseException) -> bool:
        """True for a retryable model error whose Retry-After (if any) is not too long."""
        if not isinstance(exc, ModelError) or not exc.retryable:
            return False
        return exc.retry_after is None or exc.retry_after <= self.longest_retry_after

    def wait(self, attempt: int, exc: BaseException | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (from 1): the server's
        Retry-After when `exc` carries one, else the exponential backoff."""
        if isinstance(exc, ModelError) and exc.retry_after is not None:
            return exc.retry_after
        import random  # only once a call has failed: `import steadyloop` stays lean

        doubled = self.initial * 2.0 ** min(attempt - 1, 64)
        return min(self.maximum, doubled + random.uniform(0, self.jitter))


def retry_context(
    on: tuple[type[Exception], ...], attempts: int, backoff: Backoff
) -> AsyncRetrying:
    """Up to `attempts` attempts of a block that raises one of `on` when it may be tried again:

    async for attempt in retry_context((TimeoutError,), 3, backoff):
        with attempt:
            ...  # the last failure propagates
    """
    import tenacity

    def wait(state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        return backoff.wait(state.attempt_number, failure)

    return tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception_type(on),
        stop=tenacity.stop_after_attempt(attempts),
        wait=wait,
        reraise=True,
    )


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a server asked to wait before trying again, None when it did not say.

    `retry-after-ms` (milliseconds, sent by OpenAI and Anthropic) is read before `retry-after`,
    which is seconds or an HTTP date (RFC 9110); header names in any case. A date in the past
    means no wait; a value that is neither is ignored.
    """
    if not headers:
        return None
    values = {name.lower(): value for name, value in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(values[name]) * scale
        except (KeyError, ValueError):
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(values["retry-after"])
    except (KeyError, TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
