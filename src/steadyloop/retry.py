"""Backoff between attempts, injectable so tests never sleep; the retrying itself is stamina's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from steadyloop.errors import ConfigError

if TYPE_CHECKING:
    from stamina._core import _RetryContextIterator

__all__ = ["Backoff", "retry_context"]

RetryHook = Callable[[Exception], bool | float]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: `initial` seconds, doubling, capped at `maximum`, plus up to `jitter`.

    `Backoff.none()` waits zero seconds (for tests); a provider's Retry-After always wins.
    """

    initial: float = 0.5
    maximum: float = 30.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if min(self.initial, self.maximum, self.jitter) < 0:
            raise ConfigError(f"Backoff values must be >= 0, got {self}")

    @classmethod
    def none(cls) -> Backoff:
        return cls(0.0, 0.0, 0.0)


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
