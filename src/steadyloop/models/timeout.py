"""The time limit of one whole model call, however its reply arrives.

An HTTP client's timeout bounds each wait for bytes, so a server that keeps the connection
busy (SSE keep-alive comments or pings, a JSON body that starts with whitespace, a reply sent
byte by byte) holds a call as long as it likes. A `Deadline` is taken when the call starts;
every wait on the network inside the call is made under it, and past it the wait is cancelled
and a retryable `ModelError` says which timeout ran out.

Each wait is bounded on its own (`async with deadline:`, `deadline.bound(stream)`) rather than
the whole stream at once: an adapter's `stream` is an async generator, and a timeout scope
must not stay open across its `yield`s, where the caller's code runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Generic, TypeVar

from steadyloop.errors import ModelError

__all__ = ["Deadline"]

T = TypeVar("T")


class Deadline:
    """`seconds` from now for the call to `model` (None: no limit)."""

    __slots__ = ("_at", "_scope", "model", "seconds")

    def __init__(self, seconds: float | None, model: str) -> None:
        self.seconds = seconds
        self.model = model
        self._at = None if seconds is None else asyncio.get_running_loop().time() + seconds
        self._scope: asyncio.Timeout | None = None

    async def __aenter__(self) -> None:
        self._scope = asyncio.timeout_at(self._at)
        await self._scope.__aenter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        scope, self._scope = self._scope, None
        assert scope is not None, "entered first"
        try:
            await scope.__aexit__(kind, error, traceback)
        except TimeoutError as exc:
            if not scope.expired():
                raise
            raise ModelError(
                f"{self.model}: timed out: no complete reply within the {self.seconds:g} s "
                "timeout (raise it with timeout=... on the model)",
                retryable=True,
                provider=self.model,
            ) from exc

    def bound(self, items: AsyncIterator[T]) -> AsyncIterator[T]:
        """`items` with each wait for the next one made under this deadline."""
        return _Bounded(items, self)


class _Bounded(Generic[T]):
    __slots__ = ("_deadline", "_items")

    def __init__(self, items: AsyncIterator[T], deadline: Deadline) -> None:
        self._items = items
        self._deadline = deadline

    def __aiter__(self) -> _Bounded[T]:
        return self

    async def __anext__(self) -> T:
        async with self._deadline:
            return await anext(self._items)
