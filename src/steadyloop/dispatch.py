"""Run one turn's tool calls: all at once, every call answered, errors turned into text.

The contract (DESIGN.md §3): an unknown tool, unparseable or invalid arguments, a `ToolError`, a
`TypeError`/`ValueError`, a timeout or an unexpected exception each become an error result the
model reads; transient errors are retried with backoff first. `FatalToolError`,
`KeyboardInterrupt` and cancellation stop the turn: the siblings are cancelled, every call still
gets a result (cancelled ones say so), and the exception is handed back for the agent to raise
once the results are in the transcript.

Each call goes through one method per concern, outermost first: `_answer` (the effects around
the call), `_prepare` (resolve the tool, parse and validate the arguments, fill in the run's
context: once, before any effect sees the call), `_execute` (events, the per-tool lock, what
stops the turn), `_retrying` (retries with backoff), `_attempt` (one try: deadline and render),
`_invoke` (the tool's own code, in a thread for a sync tool).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from steadyloop import texts
from steadyloop.deadline import DeadlinePassed, await_with_deadline, run_in_thread
from steadyloop.effects import Effects, ToolInvocation, nest
from steadyloop.errors import FatalToolError, ToolError
from steadyloop.events import Event, ToolCallFinished, ToolCallStarted
from steadyloop.messages import ArgumentsError, ToolCall, ToolResult, Usage
from steadyloop.retry import Backoff, retry_context
from steadyloop.tools import BoundCall, Tool, ToolOutput
from steadyloop.truncate import truncate

if TYPE_CHECKING:
    from steadyloop.context import RunContext

__all__ = ["ContextFor", "Dispatcher", "ToolThreads", "TurnResults", "current_call", "failure_text"]

logger = logging.getLogger("steadyloop.dispatch")

CANCELLED_TEXT = texts.CANCELLED  # the name tests read the text by

# The context a call's `RunContext` parameters receive, made by the run for each call.
ContextFor = Callable[[ToolCall], "RunContext[Any]"]

# The call a task answers and who hears its events, set only while someone listens: a tool that
# reports as it runs (an MCP server's progress) reads it. Each call runs in a task of its own.
_CALLING: contextvars.ContextVar[tuple[ToolCall, Callable[[Event], None]] | None] = (
    contextvars.ContextVar("steadyloop_calling", default=None)
)


def current_call() -> tuple[ToolCall, Callable[[Event], None]] | None:
    """The tool call being answered in this task and who hears the run's events; None when
    nobody listens (or outside a call)."""
    return _CALLING.get()


@dataclass(frozen=True, slots=True)
class TurnResults:
    """The answered calls of one turn, in call order, and the exception that stopped it, if any."""

    outcomes: tuple[ToolCallFinished, ...]
    stop: BaseException | None = None


class _Stop(Exception):
    """Carries a run-stopping exception out of a call's task without breaking the event loop."""

    def __init__(self, cause: BaseException, outcome: ToolCallFinished) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.outcome = outcome


class _Failure(Exception):
    """A call failed in a way the model should read about; `text` is what it reads.

    `attempts` is how many times the tool ran (0 when it never did).
    """

    def __init__(self, text: str, attempts: int = 0) -> None:
        super().__init__(text)
        self.text = text
        self.attempts = attempts


@dataclass(slots=True)  # not frozen: made for every call, and a frozen one is slower to make
class _Prepared:
    """A call resolved, parsed and validated once: `bound` is ready to run, or `failure` is
    what answers it. `arguments`: as read (validated when `bound` is set); `edited`: the
    arguments a hook ran it with instead of the model's."""

    call: ToolCall
    tool: Tool | None
    arguments: Mapping[str, Any] | None = None
    bound: BoundCall | None = None
    failure: str | None = None
    edited: Mapping[str, Any] | None = None


@dataclass(slots=True)
class _Turn:
    """What every call of one turn shares."""

    notify: Callable[[Event], None] | None
    run_id: str | None
    number: int
    context_for: ContextFor | None
    refused: Mapping[str, str]
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)


class Dispatcher:
    """Runs tool calls against a fixed set of tools with the agent's defaults."""

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        tool_timeout: float,
        max_output: int,
        backoff: Backoff,
        executor: Callable[[], Executor],
        effects: Effects | None = None,
    ) -> None:
        self._tools = tools
        self._effects = effects
        self.tools = tuple(tools.values())
        self._timeout = tool_timeout
        self._max_output = max_output
        self._backoff = backoff
        self._executor = executor
        self._available = ", ".join(sorted(tools)) or "(none)"
        # Tasks of async tools that ignored being cancelled at their deadline, until they end.
        self._lingering: set[asyncio.Task[None]] = set()

    def around(self, inner: Sequence[Effects]) -> Dispatcher:
        """A dispatcher for the same tools whose calls also go through `inner` (innermost,
        right around each call; the first outermost): the hooks of one run."""
        outer = [] if self._effects is None else [self._effects]
        return Dispatcher(
            self._tools,
            tool_timeout=self._timeout,
            max_output=self._max_output,
            backoff=self._backoff,
            executor=self._executor,
            effects=nest([*outer, *inner]),
        )

    def with_tools(self, tools: Mapping[str, Tool]) -> Dispatcher:
        """A dispatcher with the same settings and effects for other tools (a toolset's tools
        changed): a call to a tool no longer there is answered as an unknown tool."""
        return Dispatcher(
            tools,
            tool_timeout=self._timeout,
            max_output=self._max_output,
            backoff=self._backoff,
            executor=self._executor,
            effects=self._effects,
        )

    async def run(
        self,
        calls: Sequence[ToolCall],
        notify: Callable[[Event], None] | None = None,
        *,
        run_id: str | None = None,
        turn: int = 0,
        context_for: ContextFor | None = None,
        refused: Mapping[str, str] | None = None,
    ) -> TurnResults:
        """Runs every call concurrently; returns when all are answered or the turn is stopped.

        `run_id` and `turn` are what the effects (if any) are told about each call;
        `context_for(call)` makes the `RunContext` of a call to a tool that takes one (without
        it, such a tool gets a context with no deps). `refused`: calls that are not run (the
        run's call limits), by call id, each answered with its error text.
        """
        if not calls:
            return TurnResults(())
        shared = _Turn(notify, run_id, turn, context_for, refused or {})
        tasks = [asyncio.create_task(self._answer(call, shared)) for call in calls]
        stop: BaseException | None = None
        try:
            _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            if pending:
                for task in pending:
                    task.cancel()
                await asyncio.wait(pending)
        except asyncio.CancelledError as exc:
            stop = exc
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        outcomes: list[ToolCallFinished] = []
        for call, task in zip(calls, tasks, strict=True):
            if task.cancelled():
                outcome = _cancelled(call)
                if notify is not None:
                    notify(outcome)
            elif isinstance(error := task.exception(), _Stop):
                stop = stop or error.cause
                outcome = error.outcome
            elif error is not None:  # an effect around the call raised: it stops the run
                stop = stop or error
                outcome = _stopped(call, error)
                if notify is not None:
                    notify(outcome)
            else:
                outcome = task.result()
            outcomes.append(outcome)
        return TurnResults(tuple(outcomes), stop)

    def _answer(self, call: ToolCall, turn: _Turn) -> Coroutine[Any, Any, ToolCallFinished]:
        """How `call` is answered: through the effects (if any). The call is prepared before
        they see it; a hook's `proceed(arguments)` prepares it again with those."""
        prepared = self._prepare(call, turn)
        effects = self._effects
        if effects is None:
            return self._execute(prepared, turn)

        def proceed(arguments: Mapping[str, Any] | None = None, /) -> Awaitable[ToolCallFinished]:
            if arguments is None:
                return self._execute(prepared, turn)
            return self._execute(self._prepare(call, turn, arguments), turn)

        valid = prepared.arguments if prepared.bound is not None else None
        invocation = ToolInvocation(turn.run_id, turn.number, call, prepared.tool, valid)
        return effects.tool_call(invocation, proceed)

    def _prepare(
        self, call: ToolCall, turn: _Turn, edited: Mapping[str, Any] | None = None
    ) -> _Prepared:
        """Resolves the tool, reads and validates the arguments (`edited` instead of the
        model's, when given) and fills in the call's `RunContext` parameters."""
        tool = self._tools.get(call.name)
        if call.id in turn.refused:
            return _Prepared(call, tool, failure=turn.refused[call.id])
        if tool is None:
            return _Prepared(call, None, failure=self._unknown_tool(call.name), edited=edited)
        try:
            arguments = call.parsed_arguments() if edited is None else edited
        except ArgumentsError as exc:
            return _Prepared(call, tool, failure=str(exc), edited=edited)
        try:
            bound = tool.bind(arguments)
        except ArgumentsError as exc:
            return _Prepared(call, tool, arguments, failure=str(exc), edited=edited)
        except Exception as exc:  # a validator's own TypeError, a broken Tool subclass
            failure = _failure(tool.name, exc).text
            return _Prepared(call, tool, arguments, failure=failure, edited=edited)
        if tool.context_types:
            context = _no_context() if turn.context_for is None else turn.context_for(call)
            kwargs = {**bound.kwargs, **dict.fromkeys(tool.context_types, context)}
            bound = BoundCall(bound.fn, kwargs, bound.is_async)
        return _Prepared(call, tool, arguments, bound, edited=edited)

    async def _execute(self, prepared: _Prepared, turn: _Turn) -> ToolCallFinished:
        """Runs a prepared call (or answers it with its failure) and reports it started and
        finished; a run-stopping exception leaves as `_Stop`, carrying the call's answer."""
        call, tool, bound, notify = prepared.call, prepared.tool, prepared.bound, turn.notify
        if notify is not None:
            notify(ToolCallStarted(call))
        _CALLING.set((call, notify) if notify is not None else None)  # this call's task only
        started = time.perf_counter()
        attempts = 0
        is_error = True
        images: tuple[Any, ...] = ()
        usage = None
        try:
            if tool is None or bound is None:  # it cannot run: its failure answers it
                raise _Failure(prepared.failure or "")
            if tool.sequential:
                async with turn.locks.setdefault(tool.name, asyncio.Lock()):
                    output, attempts = await self._retrying(tool, bound)
            else:
                output, attempts = await self._retrying(tool, bound)
            text, images, is_error = output.text, output.images, output.is_error
            usage = output.usage
        except _Failure as failure:
            text, attempts = failure.text, failure.attempts
        except (FatalToolError, KeyboardInterrupt, SystemExit, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError) and _cancel_requested():
                raise  # the turn is being cancelled: `run` answers this call as cancelled
            text = _stop_text(call, exc)
            outcome = self._finish(prepared, text, True, (), started, attempts)
            if notify is not None:
                notify(outcome)
            raise _Stop(exc, outcome) from None
        if prepared.edited is not None:
            edited = json.dumps(dict(prepared.edited), default=str)
            text = texts.EDITED.format(arguments=edited) + text
        outcome = self._finish(prepared, text, is_error, images, started, attempts, usage)
        if notify is not None:
            notify(outcome)
        return outcome

    def _finish(
        self,
        prepared: _Prepared,
        text: str,
        is_error: bool,
        images: tuple[Any, ...],
        started: float,
        attempts: int,
        usage: Usage | None = None,
    ) -> ToolCallFinished:
        call, tool = prepared.call, prepared.tool
        limit = self._max_output
        if tool is not None and tool.max_output is not None:
            limit = tool.max_output
        result = ToolResult(call.id, call.name, truncate(text, limit), is_error, images)
        took = time.perf_counter() - started
        arguments = prepared.arguments
        return ToolCallFinished(
            call, result, text, took, attempts, arguments=arguments, usage=usage
        )

    async def _retrying(self, tool: Tool, bound: BoundCall) -> tuple[ToolOutput, int]:
        """Runs the call, retrying `retry_on` exceptions; a last failure becomes `_Failure`."""
        timeout = tool.timeout if tool.timeout is not None else self._timeout
        retry_on = tuple(t for t in tool.retry_on if issubclass(t, Exception))
        attempt_number = 0
        try:
            if tool.retries == 0:
                attempt_number = 1
                return await self._attempt(tool, bound, timeout), 1
            async for attempt in retry_context(retry_on, tool.retries + 1, self._backoff):
                with attempt:
                    attempt_number += 1
                    return await self._attempt(tool, bound, timeout), attempt_number
        except _Failure as failure:
            if attempt_number > 1:
                text = texts.AFTER_ATTEMPTS.format(text=failure.text, attempts=attempt_number)
                raise _Failure(text, attempt_number) from None
            failure.attempts = attempt_number
            raise
        except retry_on as exc:
            text = failure_text(tool.name, exc)
            if attempt_number > 1:
                text = texts.AFTER_ATTEMPTS.format(text=text, attempts=attempt_number)
            raise _Failure(text, attempt_number) from None
        raise AssertionError("unreachable: retry_context yields at least one attempt")

    async def _attempt(self, tool: Tool, bound: BoundCall, seconds: float) -> ToolOutput:
        """One try: run and render; exceptions the model can fix become `_Failure`.

        Exceptions in the tool's `retry_on` propagate as they are, for the retry loop.
        """
        try:
            value = await self._invoke(bound, seconds)
        except (FatalToolError, KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            raise
        except DeadlinePassed as exc:
            text = texts.TIMED_OUT.format(tool=tool.name, seconds=f"{seconds:g}")
            raise _TimedOut(text) from exc
        except Exception as exc:
            if isinstance(exc, tool.retry_on):
                raise
            raise _failure(tool.name, exc) from None
        try:
            return tool.render(value)
        except Exception as exc:
            raise _unexpected(tool.name, exc) from None

    async def _invoke(self, bound: BoundCall, seconds: float) -> Any:
        if bound.is_async:
            return await await_with_deadline(bound.fn(**bound.kwargs), seconds, self._lingering)
        context = contextvars.copy_context()
        call = functools.partial(context.run, bound.fn, **bound.kwargs)
        value = await run_in_thread(call, seconds, self._executor())
        if inspect.isawaitable(value):  # a sync callable that hands back an awaitable: its own time
            value = await await_with_deadline(value, seconds, self._lingering)
        return value

    def _unknown_tool(self, name: str) -> str:
        if not name:
            return texts.NO_NAME.format(available=self._available)
        return texts.UNKNOWN_TOOL.format(name=name, available=self._available)


class _TimedOut(_Failure, TimeoutError):
    """Our own deadline expired: retryable like any TimeoutError, worded for the model."""


def failure_text(tool_name: str, exc: BaseException) -> str:
    """What the model reads of an exception a tool raised: the message of errors it can fix,
    only the type of the others (which are logged with their traceback)."""
    return _failure(tool_name, exc).text


def _failure(tool_name: str, exc: BaseException) -> _Failure:
    """What the model reads: the message of errors it can fix, only the type of the others."""
    if isinstance(exc, (ToolError, TypeError, ValueError)):
        return _Failure(str(exc) or type(exc).__name__)
    return _unexpected(tool_name, exc)


def _unexpected(tool_name: str, exc: BaseException) -> _Failure:
    logger.error("tool %s failed", tool_name, exc_info=exc)
    return _Failure(texts.FAILED.format(tool=tool_name, exception_type=type(exc).__name__))


def _no_context() -> RunContext[Any]:
    """The context of a call made outside a run: no deps, nothing known."""
    from steadyloop.context import RunContext

    return RunContext(None)


def _cancel_requested() -> bool:
    """True when someone cancelled the current task (not a tool raising CancelledError itself)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _stop_text(call: ToolCall, error: BaseException) -> str:
    kind = type(error).__name__
    return texts.STOPPED.format(tool=call.name, exception_type=kind, error=error).rstrip(": ")


def _stopped(call: ToolCall, error: BaseException) -> ToolCallFinished:
    text = _stop_text(call, error)
    result = ToolResult(call.id, call.name, text, is_error=True)
    return ToolCallFinished(call, result, text, 0.0, 0)


def _cancelled(call: ToolCall) -> ToolCallFinished:
    result = ToolResult(call.id, call.name, texts.CANCELLED, is_error=True)
    return ToolCallFinished(call, result, texts.CANCELLED, 0.0, 0, cancelled=True)


class ToolThreads:
    """The agent's threads for sync tools, started on first use, with no cap: every sync call
    in flight, of all concurrent runs, starts at once instead of queueing behind others. The
    pool starts a thread only when none is idle, so it grows to the most calls that were ever
    in flight together.

    Its own object, so that the dispatcher holds no reference back to the agent: an agent
    nobody holds is freed at once (closing its run log), not at the next garbage collection.
    """

    def __init__(self) -> None:
        self._executor: Executor | None = None

    def get(self) -> Executor:
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor  # on the first sync call only

            self._executor = ThreadPoolExecutor(sys.maxsize, thread_name_prefix="steadyloop-tool")
        return self._executor

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
