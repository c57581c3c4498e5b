"""How a run starts, resumes and ends in its logs: the run log's rows, claims and commit points,
and the run's spans.

An agent hands over a `Launch` (its settings, tools and effects made ready for one run); this
module logs the run's start (or claims the logged run it goes on with), builds the `Run` (here,
and nowhere else), runs it, and logs how it ended, releasing its claim however it ended. Reads
and writes that may wait on the network or on another connection's lock happen off the event
loop, so other runs on the loop go on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from steadyloop import sessions
from steadyloop.context import check_deps
from steadyloop.errors import ConfigError, LimitExceeded
from steadyloop.loop import Run
from steadyloop.messages import AssistantMessage, Message, Usage, UserMessage
from steadyloop.result import RunResult
from steadyloop.start import RunStart

if TYPE_CHECKING:
    from steadyloop.approvals import Decisions
    from steadyloop.config import RunConfig
    from steadyloop.costshare import CostShare
    from steadyloop.dispatch import Dispatcher
    from steadyloop.events import Event
    from steadyloop.output import FinalAnswer
    from steadyloop.store import RunLinks, RunLog
    from steadyloop.toolchanges import ToolWatch
    from steadyloop.tracing.spans import Tracing

__all__ = [
    "CALLER",
    "Caller",
    "IfExists",
    "Launch",
    "check_run_id",
    "existing_run",
    "require_store",
    "resume_logged",
    "resume_paused",
    "start",
    "start_new",
]

T = TypeVar("T")
IfExists = Literal["error", "resume", "return"]
OnEvent = Callable[["Event"], None]


@dataclass(frozen=True, slots=True)
class Launch:
    """What an agent hands over to run once: its settings as the run starts, a dispatcher with
    every tool the run may call, the run's spans (None: not traced), the `final_answer` tool of
    a typed answer, the run's `deps`, who is told each event as it happens, and what the run
    offers from each toolset (None: no toolsets), to see their tools change. A sub-agent's run
    also has the cost budget it shares with its siblings (`steadyloop.costshare`) and who is
    told what the run spent when it ends, however it ends (its caller's bill)."""

    config: RunConfig
    dispatcher: Dispatcher
    tracing: Tracing | None
    answer: FinalAnswer | None
    deps: Any
    on_event: OnEvent | None
    watch: ToolWatch | None = None
    share: CostShare | None = None
    ended: Callable[[Usage], None] | None = None


Prepare = Callable[[], Awaitable[Launch]]


class LogHandle:
    """An agent's run log: one given as a path or URL is the agent's to open (on first use) and
    to close; one given open is the caller's."""

    def __init__(self, store: RunLog | str | os.PathLike[str] | None) -> None:
        self._location = store if isinstance(store, str | os.PathLike) else None
        self._store = None if isinstance(store, str | os.PathLike) else store

    def get(self) -> RunLog | None:
        """The log, opened now if it is the agent's and not open yet; None: no log."""
        if self._store is None and self._location is not None:
            from steadyloop.store import open_store

            self._store = open_store(self._location)
        return self._store

    def close(self) -> None:
        """Closes the log if the agent opened it (it opens again on next use)."""
        if self._location is not None and self._store is not None:
            self._store.close()
            self._store = None


async def streamed(
    start: Callable[[OnEvent], Coroutine[Any, Any, RunResult[Any]]],
) -> AsyncGenerator[Event, None]:
    """Each event of the run `start(on_event)` runs, as it happens; the run's error, if any,
    once its events are out. Leaving early cancels the run."""
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    task = asyncio.create_task(start(queue.put_nowait))
    task.add_done_callback(lambda _: queue.put_nowait(None))
    try:
        while (event := await queue.get()) is not None:
            yield event
        task.result()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def start(
    launch: Launch, start: RunStart, store: RunLog | None, links: RunLinks | None = None
) -> Coroutine[Any, Any, RunResult[Any]]:
    """Runs `start` (a fresh run), logged to `store` when there is one, with `links` (its
    session, the run it continues) in its row. Not a coroutine of its own when there is no
    log: nothing of it stays on the stack while the run goes on."""
    check_deps(launch.dispatcher.tools, launch.deps)  # before it is logged: nothing left behind
    if store is None:
        return _traced(_run(launch, start, launch.on_event, None), None, launch.ended)
    return _start_logged(launch, start, store, links)


async def _start_logged(
    launch: Launch, start: RunStart, store: RunLog, links: RunLinks | None
) -> RunResult[Any]:
    """`start` of a run with a log: its row first, then the run, recorded as it goes."""
    run_id = start.run_id
    tools = [tool.name for tool in launch.dispatcher.tools]
    begin = functools.partial(
        store.start_run,
        model=launch.config.model.name,
        prompt=start.prompt.text if start.prompt is not None else "",
        history=start.messages,
        config=launch.config.to_dict(tools),
        run_id=run_id,
        links=links,
    )
    # A run id of the caller's is looked up in the log first: off the event loop.
    run_id = await (_begin_off_loop(store, begin) if run_id or store.blocking_io else _now(begin))
    notify = _fan_out(store.recorder(run_id, len(start.messages)), launch.on_event)
    commit = _committer(store, run_id, launch.config)
    start = replace(start, run_id=run_id)
    return await _traced(_run(launch, start, notify, commit), store, launch.ended)


def start_new(
    launch: Launch,
    store: RunLog | None,
    message: UserMessage,
    history: Sequence[Message],
    run_id: str | None = None,
    session: str | None = None,
    fork_from: str | None = None,
) -> Coroutine[Any, Any, RunResult[Any]]:
    """Runs `message` as a new run: after `history`, or continuing the conversation `session`
    or the transcript of the run `fork_from` from the log (see `steadyloop.sessions`). Not a
    coroutine of its own: nothing of it stays on the stack while the run goes on."""
    if store is None or (session is None and fork_from is None):
        return start(launch, RunStart.fresh(message, history, run_id), store)

    if launch.tracing is not None:
        launch.tracing.conversation = session

    async def begin(continued: tuple[Message, ...], links: RunLinks) -> RunResult[Any]:
        return await start(launch, RunStart.fresh(message, continued, run_id), store, links)

    return sessions.starting(store, session, fork_from, begin)


async def resume_paused(
    result: RunResult[Any], decisions: Decisions | None, prepare: Prepare
) -> RunResult[Any]:
    """Goes on with a paused `result` without a run log (the pause it holds is used up)."""
    from steadyloop.resume import paused_point

    launch = await prepare()
    _require_tools(launch, {c.call_id: c.name for c in result.pending}, result.run_id)
    point = paused_point(result, decisions)
    check_deps(launch.dispatcher.tools, launch.deps)
    return await _traced(_run(launch, point, launch.on_event, None), None, launch.ended)


async def resume_logged(
    store: RunLog, name: str, decisions: Decisions | None, prepare: Prepare
) -> RunResult[Any]:
    """Claims logged run `name` (an id or a unique prefix) and goes on with it from its log;
    the claim is released at once when it cannot go on, else when it ends."""
    from steadyloop.resume import resume_point
    from steadyloop.store.claims import claim
    from steadyloop.store.ids import find_run

    run_id = await asyncio.to_thread(lambda: find_run(store, name).id)
    await claim(store, run_id)  # a resume cancelled meanwhile keeps nothing
    try:
        point = await asyncio.to_thread(resume_point, store, run_id, decisions)
        launch = await prepare()
        _require_tools(launch, _waiting_tools(point), run_id)
        check_deps(launch.dispatcher.tools, launch.deps)
        # The recorder reads where the logged run stands: off the loop, like every read.
        record = await asyncio.to_thread(store.recorder, run_id)
        commit = _committer(store, run_id, launch.config)
        run = _run(launch, point, _fan_out(record, launch.on_event), commit)
        # Marking waits for the write (which may wait on another connection): off the loop.
        await asyncio.to_thread(store.mark, run_id, "running")
    except BaseException:
        await _store_io(store, store.release, run_id)
        raise
    return await _traced(run, store, launch.ended)


async def existing_run(
    store: RunLog, run_id: str, if_exists: IfExists, answer_type: Any
) -> RunResult[Any] | Literal["resume"] | None:
    """What `run(run_id=...)` does with a run id the log may hold already: its logged result
    (a finished run, read as `answer_type`), "resume" (go on with it), or None (start it; the
    log refuses an id it has when `if_exists` is "error")."""
    if if_exists == "error":
        return None
    from steadyloop.resume import PAUSED, logged_result

    info = await asyncio.to_thread(store.find, run_id)
    if info is None:
        return None
    if info.stop_reason == "approval" and info.status in PAUSED:
        raise ConfigError(
            f"run {run_id} is paused until its waiting calls are decided: continue it with "
            f"agent.resume({run_id!r}, decisions={{call_id: Approve() | Deny(reason) | "
            "Edit(arguments)}), not run()"
        )
    if info.finished:
        return await asyncio.to_thread(logged_result, store, info, answer_type)
    if if_exists == "return":
        raise ConfigError(
            f"run {run_id} has not finished (it is {info.status}): pass if_exists='resume' "
            "to go on with it"
        )
    return "resume"


def check_run_id(run_id: object, if_exists: object) -> None:
    """Refuses a `run_id` that is no str and an `if_exists` that is none of its choices."""
    if if_exists not in ("error", "resume", "return"):
        raise ConfigError(f'if_exists must be "error", "resume" or "return", got {if_exists!r}')
    if run_id is not None and not isinstance(run_id, str):
        raise ConfigError(
            f"run_id must be a str, got {type(run_id).__name__}: pass run_id=str(...)"
        )


def require_store(store: RunLog | None, action: str) -> RunLog:
    """`store`, or a `ConfigError` saying that `action` needs one."""
    if store is None:
        raise ConfigError(f"{action} needs a run log: create the Agent with store=PATH")
    return store


def _run(
    launch: Launch,
    start: RunStart,
    notify: OnEvent | None,
    commit: Callable[[], Awaitable[None]] | None,
) -> Run:
    """The one place a `Run` is made."""
    return Run(
        launch.config, launch.dispatcher, start, notify=notify, commit=commit,
        tracing=launch.tracing, streaming=launch.on_event is not None, answer=launch.answer,
        deps=launch.deps, watch=launch.watch, share=launch.share,
    )  # fmt: skip


def _require_tools(launch: Launch, waiting: Mapping[str, str], run_id: str | None) -> None:
    """`ConfigError`, before anything is decided, run or logged, when a call waiting for a
    decision (`waiting`: tool name by call id) names a tool the agent lacks: the call would be
    answered "unknown tool" and its decision lost, so the run stays paused."""
    have = {tool.name for tool in launch.dispatcher.tools}
    missing = sorted({name for name in waiting.values() if name not in have})
    if missing:
        calls = ", ".join(f"{c} ({name})" for c, name in waiting.items() if name in missing)
        raise ConfigError(
            f"run {run_id or '(not logged)'} waits for a decision on {calls}, but this agent "
            f"has no tool {', '.join(missing)}; nothing was run and the run stays paused: "
            "resume it with the agent that has the tool"
        )


def _waiting_tools(point: RunStart) -> dict[str, str]:
    """The tool each call waiting for a decision at `point` names, by call id."""
    last = next((m for m in reversed(point.messages) if isinstance(m, AssistantMessage)), None)
    calls = last.tool_calls if last is not None else ()
    return {call.id: call.name for call in calls if call.id in point.decisions}


def _committer(
    store: RunLog, run_id: str, config: RunConfig
) -> Callable[[], Awaitable[None]] | None:
    """The write-ahead points of a "turn" run: None (no forced commits) for "batch"."""
    if config.durability == "batch":
        return None
    return functools.partial(store.commit, run_id)


class Caller:
    """The run whose tool calls are being answered, and its log: what a sub-agent a call
    starts takes from it (the log, the cost budget, the spans).

    Both are held weakly: the contexts of the run's call tasks hold this object, and a task
    that failed may sit in a reference cycle (its traceback) until the garbage collector runs;
    the run and its log must not live on with it (a log the agent opened stays open until
    nothing holds it)."""

    __slots__ = ("_run", "_store")

    def __init__(self, run: Run, store: RunLog | None) -> None:
        self._run = weakref.ref(run)
        self._store = None if store is None else weakref.ref(store)

    @property
    def run(self) -> Run | None:
        """The calling run (None once it is gone)."""
        return self._run()

    @property
    def store(self) -> RunLog | None:
        """The calling run's log, None when it has none."""
        return None if self._store is None else self._store()


CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "steadyloop_caller", default=None
)
"""The run the current task works for; its tool calls' tasks inherit it."""


def _traced(
    run: Run, store: RunLog | None, ended: Callable[[Usage], None] | None
) -> Coroutine[Any, Any, RunResult[Any]]:
    """Runs `run` in its logs: the run log, and its spans when it is traced; `ended` is told
    what the run spent, however it ended. Not a coroutine of its own for a run with nothing
    to do around it (no spans, no one to tell, no tool that starts runs)."""
    if run.tracing is None and ended is None and not run.dispatcher.starts_runs:
        return _logged(run, store)
    return _traced_run(run, store, ended)


async def _traced_run(
    run: Run, store: RunLog | None, ended: Callable[[Usage], None] | None
) -> RunResult[Any]:
    """`_traced` of a run with spans, someone to tell its cost, or tools that start runs."""
    # Only a run whose tools start runs has anyone to tell: a plain run spares a context.
    token = CALLER.set(Caller(run, store)) if run.dispatcher.starts_runs else None
    try:
        if run.tracing is None:
            return await _logged(run, store)
        return await run.tracing.run(run.run_id, functools.partial(_logged, run, store))
    finally:
        if token is not None:
            CALLER.reset(token)
        if ended is not None:
            ended(run.usage)


def _logged(run: Run, store: RunLog | None) -> Coroutine[Any, Any, RunResult[Any]]:
    """Runs `run`, marking in the log how it ended when it did not end by answering, and
    releasing its claim however it ended (a run without a log just runs)."""
    if store is None or run.run_id is None:
        return run.execute()
    return _logged_run(run, store, run.run_id)


async def _logged_run(run: Run, store: RunLog, run_id: str) -> RunResult[Any]:
    """`_logged` of a run with a log."""
    ending: tuple[str, str | None] | None = None
    try:
        result = await run.execute()
        if result.stop_reason == "approval":
            await asyncio.to_thread(store.mark, run_id, "paused", None, run.usage)
        # Off the loop's thread, so other runs on this loop go on while this one's log commits;
        # before the claim is released, so whoever takes the run over finds all of it.
        await store.commit(run_id)
    except LimitExceeded:
        await asyncio.to_thread(store.flush)
        raise
    except (asyncio.CancelledError, KeyboardInterrupt):
        ending = ("interrupted", None)
        raise
    except BaseException as exc:
        ending = ("error", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        await _ended(store, run_id, ending, run.usage)
    return result


async def _ended(
    store: RunLog, run_id: str, ending: tuple[str, str | None] | None, usage: Usage
) -> None:
    """Marks how the run ended (`ending`: status and error, None when nothing is to be marked)
    and then releases its claim. Marking waits for the write, which may wait on another
    connection's lock: that happens off the event loop, with the release after it in the same
    thread, so no other run on the loop waits and nobody takes the run over before its end is
    logged."""

    def end() -> None:
        try:
            if ending is not None:
                store.mark(run_id, ending[0], ending[1], usage)
        finally:
            store.release(run_id)

    await (asyncio.to_thread(end) if ending is not None or store.blocking_io else _now(end))


async def _begin_off_loop(store: RunLog, begin: Callable[[], str]) -> str:
    """`begin()` (logging and claiming a new run) in a worker thread. A caller cancelled
    meanwhile cannot stop the thread: it waits for the run's row, marks it interrupted and
    releases it, so the id is free for a resume sent right after (a run nobody runs never holds
    its claim until the log closes)."""
    in_context = functools.partial(contextvars.copy_context().run, begin)  # as to_thread does
    logged = asyncio.get_running_loop().run_in_executor(None, in_context)
    try:
        return await asyncio.shield(logged)
    except asyncio.CancelledError:
        await asyncio.shield(_abandon(store, logged))
        raise


async def _abandon(store: RunLog, logged: asyncio.Future[str]) -> None:
    try:
        run_id = await logged
    except Exception:
        return  # nothing was logged or claimed
    await _ended(store, run_id, ("interrupted", None), Usage())


async def _store_io(store: RunLog, call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` on a store: off the event loop when the store may wait on the network."""
    if store.blocking_io:
        return await asyncio.to_thread(call, *args)
    return call(*args)


async def _now(call: Callable[[], T]) -> T:
    return call()


def _fan_out(first: OnEvent, second: OnEvent | None) -> OnEvent:
    if second is None:
        return first

    def both(event: Event) -> None:
        first(event)
        second(event)

    return both
