"""Sessions: runs that go on with a conversation, one after the other, through the run log.

A session is a name; a run started with `session=NAME` continues the transcript of the
session's latest run (the one that started last), read from the log. `fork_from=RUN_ID` starts
from that run's transcript instead (a branch, or a rewind of the session). Two runs of one
session never overlap: a run holds its session while it runs, with the same kind of lock as a
live run (`RunLog.claim`: a lock file beside a SQLite log, an advisory lock in Postgres), which
the operating system or the database drops when the process dies, so a killed run never blocks
its session. A second run waits for the first to end, then continues from it. A session whose
latest run waits for approval refuses new prompts until that run is resumed.

When the transcript was compacted, a run continues from its latest summary: the history it is
given is the head (the conversation's first prompt), the summary and what followed it, so a long
conversation costs each run what its context holds, not the whole session; the messages the
summary replaced stay in the log, in the runs that summarised them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from steadyloop.errors import ConfigError
from steadyloop.messages import Message, Summary, UserMessage

if TYPE_CHECKING:
    from steadyloop.store import RunInfo, RunLinks, RunLog

__all__ = ["check", "continued_history", "holding", "lock_id", "resuming", "starting"]

T = TypeVar("T")

# How long a run waiting for its session sleeps between tries: from the first to the last.
FIRST_WAIT = 0.01
LONGEST_WAIT = 0.25


def check(
    store: RunLog | None,
    session: str | None,
    fork_from: str | None,
    history: Sequence[Message],
) -> None:
    """`ConfigError`, before anything runs, for a session or fork the run cannot have."""
    if session is None and fork_from is None:
        return
    if session is not None and (not isinstance(session, str) or not session):
        raise ConfigError(f"session must be a non-empty str, got {session!r}")
    if fork_from is not None and (not isinstance(fork_from, str) or not fork_from):
        raise ConfigError(f"fork_from must be a run id (a non-empty str), got {fork_from!r}")
    given = "session=" if session is not None else "fork_from="
    if store is None:
        raise ConfigError(
            f"{given} needs a run log (the conversation is read from it): create the Agent "
            "with store=PATH"
        )
    if history:
        raise ConfigError(
            f"pass either history= or {given}, not both: a session's history is read from the "
            "run log"
        )


def lock_id(session: str) -> str:
    """The claim a run of `session` holds while it runs (never a run id anyone picks)."""
    return f"\x00session\x00{session}"


@contextlib.asynccontextmanager
async def holding(store: RunLog, session: str | None) -> AsyncIterator[None]:
    """Holds `session` (nothing for None) for the body: waits, without blocking the event loop
    and cancellably, while a run of the session in any process holds it."""
    if session is None:
        yield
        return
    key, wait = lock_id(session), FIRST_WAIT
    while not await _claimed(store, key):
        await asyncio.sleep(wait)
        wait = min(wait * 2, LONGEST_WAIT)
    try:
        yield
    finally:
        await _io(store, store.release, key)


async def starting(
    store: RunLog,
    session: str | None,
    fork_from: str | None,
    start: Callable[[tuple[Message, ...], RunLinks], Awaitable[T]],
) -> T:
    """Runs `start(history, links)` in `session` (holding it), its history the transcript of
    `fork_from` or else of the session's latest run; `ConfigError` (nothing runs) when the
    session waits for approval or `fork_from` is not in the log."""
    from steadyloop.store import RunLinks

    async with holding(store, session):
        previous, history = await _io(store, _continued, store, session, fork_from)
        links = RunLinks(session=session, previous_run_id=previous.id if previous else None)
        return await start(history, links)


async def resuming(store: RunLog, name: str, resume: Callable[[], Awaitable[T]]) -> T:
    """Runs `resume()` of logged run `name` holding the run's session, when it has one."""
    from steadyloop.store.ids import find_run

    info = await asyncio.to_thread(find_run, store, name)
    async with holding(store, info.session):
        return await resume()


def continued_history(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The history a run continuing `messages` gets: all of them, or, once they were compacted,
    the head (the first prompt), the latest summary and the messages after what it replaced (the
    model's view of them; the summary counts from the head again)."""
    summaries = [m for m in messages if isinstance(m, Summary)]
    if not summaries:
        return tuple(messages)
    latest = summaries[-1]
    conversation = [m for m in messages if not isinstance(m, Summary)]
    head = 1 if conversation and isinstance(conversation[0], UserMessage) else 0
    return (
        *conversation[:head],
        Summary(text=latest.text, replaced=0),
        *conversation[head + latest.replaced :],
    )


def _continued(
    store: RunLog, session: str | None, fork_from: str | None
) -> tuple[RunInfo | None, tuple[Message, ...]]:
    """The run the new run continues and the history it gets from it, read in one go (one
    hop off the event loop, not one per read, when the log waits on the network)."""
    previous = _previous(store, session, fork_from)
    if previous is None:
        return None, ()
    return previous, continued_history(store.messages(previous.id))


def _previous(store: RunLog, session: str | None, fork_from: str | None) -> RunInfo | None:
    """The run whose transcript the new run continues (None: a session's first run)."""
    latest = store.latest(session) if session is not None else None
    if latest is not None and _paused(latest):
        raise _waiting(latest, f"session {session!r}")
    if fork_from is None:
        return latest
    found = store.find(fork_from)
    if found is None:
        raise ConfigError(
            f"fork_from={fork_from!r}: no such run in {store.location}; nothing was run "
            "(`steadyloop logs` lists the runs)"
        )
    if _paused(found):
        raise _waiting(found, f"run {found.id}")
    return found


def _paused(info: RunInfo) -> bool:
    from steadyloop.resume import PAUSED

    return info.stop_reason == "approval" and info.status in PAUSED


def _waiting(info: RunInfo, what: str) -> ConfigError:
    return ConfigError(
        f"{what} waits for approval in run {info.id}; nothing was run: decide its calls first "
        f"with agent.resume({info.id!r}, decisions=...) or `steadyloop resume {info.id} "
        "--approve CALL`, then send the prompt again"
    )


async def _claimed(store: RunLog, key: str) -> bool:
    """Claims `key`; False when a run of the session holds it, here or elsewhere. A run
    cancelled while it claims keeps nothing (see `steadyloop.store.claims`)."""
    from steadyloop.store.claims import claim

    try:
        await claim(store, key)
    except ConfigError:
        return False
    return True


async def _io(store: RunLog, call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` on a store: off the event loop when the store may wait on the network."""
    if store.blocking_io:
        return await asyncio.to_thread(call, *args)
    return call(*args)
