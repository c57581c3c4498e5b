"""Run one turn's tool calls: all at once, every call answered, errors turned into text.

The error contract (`docs/patterns/errors-as-text.md`): an unknown tool, unparseable or invalid
arguments, a `ToolError`, a `TypeError`/`ValueError`, a timeout or an unexpected exception each
become an error result the model reads; transient errors are retried with backoff first.
`FatalToolError`, `KeyboardInterrupt` and cancellation stop the turn: the siblings are
cancelled, every call still gets a result (cancelled ones say so), and the exception is handed
back for the agent to raise once the results are in the transcript.

Each call runs in one task of its own, the tool's code included, and goes through one method
per concern, outermost first: `_answer` (the effects around the call), `_prepare` (resolve the
tool, parse and validate the arguments, fill in the run's context: once, before any effect sees
the call), `_execute` (events, the per-tool lock, what stops the turn), `_retrying` (retries
with backoff), `_attempt` (one try: deadline and render), `_invoke` (the tool's own code, in a
thread for a sync tool). The turn's `Deadlines` (deadline.py) keep every attempt's time with one
timer; what the model reads of a failure is worded in failures.py.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from steadyloop import failures, texts
from steadyloop.deadline import DeadlinePassed, Deadlines, run_in_thread
from steadyloop.effects import Effects, ToolInvocation, nest
from steadyloop.errors import FatalToolError
from steadyloop.events import Event, ToolCallFinished, ToolCallStarted
from steadyloop.failures import Failure, TimedOut
from steadyloop.messages import ArgumentsError, ToolCall, ToolResult
from steadyloop.retry import Backoff, retry_context
from steadyloop.tools import BoundCall, Tool, ToolOutput
from steadyloop.truncate import truncate

if TYPE_CHECKING:
    from steadyloop.context import RunContext

__all__ = ["ContextFor", "Dispatcher", "TurnResults", "current_call"]

CANCELLED_TEXT = texts.CANCELLED  # the name tests read the text by

# The context a call's `RunContext` parameters receive, made by the run for each call.
ContextFor = Callable[[ToolCall], "RunContext[Any]"]

# The call a task answers and who hears its events, set only while someone listens: a tool that
# reports as it runs (an MCP server's progress) reads it. Each call runs in a task of its own.
_CALLING: contextvars.ContextVar[tuple[ToolCall, Callable[[Event], None]] | None] = (
    contextvars.ContextVar("steadyloop_calling", default=None)
)


# No call of the turn is refused.
_NONE: Mapping[str, str] = MappingProxyType({})


def current_call() -> tuple[ToolCall, Callable[[Event], None]] | None:
    """The tool call being answered in this task and who hears the run's events; None when
    nobody listens (or outside a call)."""
    return _CALLING.get()


@dataclass(slots=True)  # not frozen: one a turn, and a frozen one is slower to make
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
    """What every call of one turn shares. `ended` is set once every call has ended, or as
    soon as one ends with an exception, which stops the turn; `left` counts the others."""

    notify: Callable[[Event], None] | None
    run_id: str | None
    number: int
    context_for: ContextFor | None
    refused: Mapping[str, str]
    deadlines: Deadlines
    left: int
    ended: asyncio.Future[None]
    tasks: Sequence[asyncio.Task[ToolCallFinished]] = ()
    locks: dict[str, asyncio.Lock] | None = None  # made for the first sequential tool

    def lock(self, name: str) -> asyncio.Lock:
        """The lock the calls of sequential tool `name` take in turn."""
        if self.locks is None:
            self.locks = {}
        lock = self.locks.get(name)
        if lock is None:
            lock = self.locks[name] = asyncio.Lock()
        return lock

    def ended_one(self, failed: bool) -> None:
        """A call ended; one that failed cancels the others at once."""
        self.left -= 1
        if failed:
            current = asyncio.current_task()
            for task in self.tasks:
                if task is not current:
                    task.cancel()
        if (failed or not self.left) and not self.ended.done():
            self.ended.set_result(None)


class _Proceed:
    """The `proceed` the effects get for a prepared call: runs it, or prepares it again with
    the arguments a hook gives. One small object per hooked call, where a closure would take a
    function, its cells and their tuple."""

    __slots__ = ("_dispatcher", "_prepared", "_turn")

    def __init__(self, dispatcher: Dispatcher, prepared: _Prepared, turn: _Turn) -> None:
        self._dispatcher = dispatcher
        self._prepared = prepared
        self._turn = turn

    def __call__(
        self, arguments: Mapping[str, Any] | None = None, /
    ) -> Coroutine[Any, Any, ToolCallFinished]:
        dispatcher, prepared, turn = self._dispatcher, self._prepared, self._turn
        if arguments is not None:
            prepared = dispatcher._prepare(prepared.call, turn, arguments)
        return dispatcher._execute(prepared, turn)


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
        self.starts_runs = any(tool.starts_runs for tool in self.tools)
        self._timeout = tool_timeout
        self._max_output = max_output
        self._backoff = backoff
        self._executor = executor
        self._available = ", ".join(sorted(tools)) or "(none)"
        # The rest of each async tool that outlived its grace, in a task of its own until it ends.
        self._lingering: set[asyncio.Task[None]] = set()

    def around(self, inner: Sequence[Effects]) -> Dispatcher:
        """A dispatcher for the same tools whose calls also go through `inner` (innermost,
        right around each call; the first outermost): the hooks of one run."""
        outer = [] if self._effects is None else [self._effects]
        return self._like(self._tools, nest([*outer, *inner]))

    def with_tools(self, tools: Mapping[str, Tool]) -> Dispatcher:
        """A dispatcher with the same settings and effects for other tools (a toolset's tools
        changed): a call to a tool no longer there is answered as an unknown tool."""
        return self._like(tools, self._effects)

    def _like(self, tools: Mapping[str, Tool], effects: Effects | None) -> Dispatcher:
        return Dispatcher(
            tools,
            tool_timeout=self._timeout,
            max_output=self._max_output,
            backoff=self._backoff,
            executor=self._executor,
            effects=effects,
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
        loop = asyncio.get_running_loop()
        deadlines, ended = Deadlines(self._lingering), loop.create_future()
        shared = _Turn(
            notify, run_id, turn, context_for, refused or _NONE, deadlines, len(calls), ended
        )
        tasks = [loop.create_task(self._call(call, shared)) for call in calls]
        shared.tasks = tasks
        stop: BaseException | None = None
        try:
            await ended
            if pending := [task for task in tasks if not task.done()]:  # a call stopped the turn
                await asyncio.wait(pending)  # the others, cancelled, end within their grace
        except asyncio.CancelledError as exc:
            stop = exc
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            deadlines.close()
            shared.tasks = ()  # a task's exception holds the turn: no cycle through it
        outcomes: list[ToolCallFinished] = []
        for call, task in zip(calls, tasks, strict=True):
            if task.cancelled():
                outcome = failures.cancelled(call)
                if notify is not None:
                    notify(outcome)
            elif isinstance(error := task.exception(), _Stop):
                stop = stop or error.cause
                outcome = error.outcome
            elif error is not None:  # an effect around the call raised: it stops the run
                stop = stop or error
                outcome = failures.stopped(call, error)
                if notify is not None:
                    notify(outcome)
            else:
                outcome = task.result()
            outcomes.append(outcome)
        return TurnResults(tuple(outcomes), stop)

    async def _call(self, call: ToolCall, turn: _Turn) -> ToolCallFinished:
        """One call's task: answers it and counts it ended."""
        failed = False
        try:
            return await self._answer(call, turn)
        except asyncio.CancelledError:
            raise
        except BaseException:
            failed = True
            raise
        finally:
            turn.ended_one(failed)

    def _answer(self, call: ToolCall, turn: _Turn) -> Coroutine[Any, Any, ToolCallFinished]:
        """How `call` is answered: through the effects (if any). The call is prepared before
        they see it; a hook's `proceed(arguments)` prepares it again with those."""
        prepared = self._prepare(call, turn)
        effects = self._effects
        if effects is None:
            return self._execute(prepared, turn)
        valid = prepared.arguments if prepared.bound is not None else None
        invocation = ToolInvocation(turn.run_id, turn.number, call, prepared.tool, valid)
        return effects.tool_call(invocation, _Proceed(self, prepared, turn))

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
            failure = failures.failure(tool.name, exc).text
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
        # This call's task only; None only over the call of a run this one runs in (a
        # sub-agent's), which its task inherited.
        if notify is not None or _CALLING.get() is not None:
            _CALLING.set((call, notify) if notify is not None else None)
        started = time.perf_counter()
        attempts = 0
        try:
            if tool is None or bound is None:  # it cannot run: its failure answers it
                raise Failure(prepared.failure or "")
            if tool.sequential:
                async with turn.lock(tool.name):
                    output, attempts = await self._retrying(tool, bound, turn.deadlines)
            else:
                output, attempts = await self._retrying(tool, bound, turn.deadlines)
        except Failure as failure:
            output, attempts = ToolOutput(failure.text, is_error=True), failure.attempts
        except (FatalToolError, KeyboardInterrupt, SystemExit, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError) and _cancel_requested():
                raise  # the turn is being cancelled: `run` answers this call as cancelled
            stopped = ToolOutput(failures.stop_text(call, exc), is_error=True)
            outcome = self._finish(prepared, stopped, started, attempts)
            if notify is not None:
                notify(outcome)
            raise _Stop(exc, outcome) from None
        if prepared.edited is not None:
            edited = json.dumps(dict(prepared.edited), default=str)
            output = replace(output, text=texts.EDITED.format(arguments=edited) + output.text)
        outcome = self._finish(prepared, output, started, attempts)
        if notify is not None:
            notify(outcome)
        return outcome

    def _finish(
        self, prepared: _Prepared, output: ToolOutput, started: float, attempts: int
    ) -> ToolCallFinished:
        call, tool, text = prepared.call, prepared.tool, output.text
        limit = self._max_output
        if tool is not None and tool.max_output is not None:
            limit = tool.max_output
        content = truncate(text, limit)
        result = ToolResult(call.id, call.name, content, output.is_error, output.images)
        took = time.perf_counter() - started
        return ToolCallFinished(
            call, result, text, took, attempts, arguments=prepared.arguments, usage=output.usage
        )

    async def _retrying(
        self, tool: Tool, bound: BoundCall, deadlines: Deadlines
    ) -> tuple[ToolOutput, int]:
        """Runs the call, retrying `retry_on` exceptions; a last failure becomes `Failure`."""
        timeout = tool.timeout if tool.timeout is not None else self._timeout
        attempt_number = 0
        try:
            if tool.retries == 0:
                attempt_number = 1
                return await self._attempt(tool, bound, timeout, deadlines), 1
            retry_on = _retryable(tool)
            async for attempt in retry_context(retry_on, tool.retries + 1, self._backoff):
                with attempt:
                    attempt_number += 1
                    output = await self._attempt(tool, bound, timeout, deadlines)
                    return output, attempt_number
        except Failure as failure:
            if attempt_number > 1:
                text = texts.AFTER_ATTEMPTS.format(text=failure.text, attempts=attempt_number)
                raise Failure(text, attempt_number) from None
            failure.attempts = attempt_number
            raise
        except _retryable(tool) as exc:
            text = failures.failure_text(tool.name, exc)
            if attempt_number > 1:
                text = texts.AFTER_ATTEMPTS.format(text=text, attempts=attempt_number)
            raise Failure(text, attempt_number) from None
        raise AssertionError("unreachable: retry_context yields at least one attempt")

    async def _attempt(
        self, tool: Tool, bound: BoundCall, seconds: float, deadlines: Deadlines
    ) -> ToolOutput:
        """One try: run and render; exceptions the model can fix become `Failure`.

        Exceptions in the tool's `retry_on` propagate as they are, for the retry loop.
        """
        try:
            value = await self._invoke(bound, seconds, deadlines)
        except (FatalToolError, KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            raise
        except DeadlinePassed as exc:
            text = texts.TIMED_OUT.format(tool=tool.name, seconds=f"{seconds:g}")
            raise TimedOut(text) from exc
        except Exception as exc:
            if isinstance(exc, tool.retry_on):
                raise
            raise failures.failure(tool.name, exc) from None
        try:
            return tool.render(value)
        except Exception as exc:
            raise failures.unexpected(tool.name, exc) from None

    def _invoke(self, bound: BoundCall, seconds: float, deadlines: Deadlines) -> Awaitable[Any]:
        """The tool's own code under its deadline: in this task, or in a thread when sync."""
        if bound.is_async:
            return deadlines.run(bound.fn(**bound.kwargs), seconds)
        return self._in_thread(bound, seconds, deadlines)

    async def _in_thread(self, bound: BoundCall, seconds: float, deadlines: Deadlines) -> Any:
        context = contextvars.copy_context()
        call = functools.partial(context.run, bound.fn, **bound.kwargs)
        value = await run_in_thread(call, seconds, self._executor())
        if inspect.isawaitable(value):  # a sync callable that hands back an awaitable: its own time
            value = await deadlines.run(value, seconds)
        return value

    def _unknown_tool(self, name: str) -> str:
        if not name:
            return texts.NO_NAME.format(available=self._available)
        return texts.UNKNOWN_TOOL.format(name=name, available=self._available)


def _retryable(tool: Tool) -> tuple[type[Exception], ...]:
    """The exceptions a tool's calls are retried on (only exceptions: never a cancellation)."""
    return tuple(t for t in tool.retry_on if issubclass(t, Exception))


def _no_context() -> RunContext[Any]:
    """The context of a call made outside a run: no deps, nothing known."""
    from steadyloop.context import RunContext

    return RunContext(None)


def _cancel_requested() -> bool:
    """True when someone cancelled the current task (not a tool raising CancelledError itself)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
