"""Backoff between attempts, injectable so tests never sleep; the retrying itself is stamina's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from steadyloop.errors import ConfigError, ModelError

if TYPE_CHECKING:
    from stamina._core import _RetryContextIterator

__all__ = ["Backoff", "retry_context"]

RetryHook = Callable[[Exception], bool | float]


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

    def worth_retrying(self, exc: Exception) -> bool:
        """True for a retryable model error whose Retry-After (if any) is not too long."""
        if not isinstance(exc, ModelError) or not exc.retryable:
            return False
        return exc.retry_after is None or exc.retry_after <= self.longest_retry_after

    def model_retry_hook(self, exc: Exception) -> bool | float:
        """For stamina: retry retryable model errors, waiting what the provider asked for."""
        if not self.worth_retrying(exc):
            return False
        assert isinstance(exc, ModelError)
        return exc.retry_after if exc.retry_after is not None else True


def retry_context(
    on: type[Exception] | tuple[type[Exception], ...] | RetryHook,
    attempts: int,
    backoff: Backoff,
) -> _RetryContextIterator:
    """Yields up to `attempts` attempt context managers; see `stamina.retry_context`."""
    import stamina

    return stamina.retry_context(
        on=on,
        attempts=attempts,
        timeout=None,
        wait_initial=backoff.initial,
        wait_max=backoff.maximum,
        wait_jitter=backoff.jitter,
    )
