"""Run one turn's tool calls: all at once, every call answered, errors turned into text.

The contract (DESIGN.md §3): an unknown tool, unparseable or invalid arguments, a `ToolError`, a
`TypeError`/`ValueError`, a timeout or an unexpected exception each become an error result the
model reads; transient errors are retried with backoff first. `FatalToolError`,
`KeyboardInterrupt` and cancellation stop the turn: the siblings are cancelled, every call still
gets a result (cancelled ones say so), and the exception is handed back for the agent to raise
once the results are in the transcript.
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
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from steadyloop.deadline import DeadlinePassed, await_with_deadline, run_in_thread
from steadyloop.effects import Effects, ToolInvocation, nest
from steadyloop.errors import FatalToolError, ToolError
from steadyloop.events import Event, ToolCallFinished, ToolCallStarted
from steadyloop.messages import ToolCall, ToolResult
from steadyloop.retry import Backoff, retry_context
from steadyloop.tools import ArgumentsError, BoundCall, Tool, ToolOutput
from steadyloop.truncate import truncate

__all__ = ["Batch", "Dispatcher", "ToolThreads", "parse_arguments"]

logger = logging.getLogger("steadyloop.dispatch")

CANCELLED_TEXT = "cancelled: the run stopped before this call finished"
EDITED_TEXT = "the reviewer changed the arguments of this call to {arguments}; with them:\n"
_RAW_PREVIEW = 200


@dataclass(frozen=True, slots=True)
class Batch:
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
        self._settings = (tool_timeout, max_output, backoff, executor)
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
        timeout, max_output, backoff, executor = self._settings
        outer = [] if self._effects is None else [self._effects]
        return Dispatcher(
            self._tools,
            tool_timeout=timeout,
            max_output=max_output,
            backoff=backoff,
            executor=executor,
            effects=nest([*outer, *inner]),
        )

    async def run(
        self,
        calls: Sequence[ToolCall],
        notify: Callable[[Event], None] | None = None,
        *,
        run_id: str | None = None,
        turn: int = 0,
    ) -> Batch:
        """Runs every call concurrently; returns when all are answered or the turn is stopped.

        `run_id` and `turn` are what the effects (if any) are told about each call.
        """
        if not calls:
            return Batch(())
        locks: dict[str, asyncio.Lock] = {}
        effects = self._effects
        tasks = [
            asyncio.create_task(
                self._answer(call, locks, notify)
                if effects is None
                else effects.tool_call(
                    ToolInvocation(run_id, turn, call, self._tools.get(call.name)),
                    functools.partial(self._answer, call, locks, notify),
                )
            )
            for call in calls
        ]
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
        return Batch(tuple(outcomes), stop)

    async def _answer(
        self,
        call: ToolCall,
        locks: dict[str, asyncio.Lock],
        notify: Callable[[Event], None] | None,
        edited: Mapping[str, Any] | None = None,
    ) -> ToolCallFinished:
        """Answers `call`; with `edited` arguments (from an effect), runs it with those."""
        if notify is not None:
            notify(ToolCallStarted(call))
        started = time.perf_counter()
        tool = self._tools.get(call.name)
        attempts = 0
        is_error = True
        images: tuple[Any, ...] = ()
        arguments: Mapping[str, Any] | None = None
        try:
            if tool is None:
                raise _Failure(self._unknown_tool(call.name))
            arguments = parse_arguments(call.arguments if edited is None else edited)
            try:
                bound = tool.bind(arguments)
            except ArgumentsError as exc:
                raise _Failure(str(exc)) from None
            except Exception as exc:  # a validator's own TypeError, a broken Tool subclass
                raise _failure(tool.name, exc) from None
            if tool.sequential:
                lock = locks.setdefault(tool.name, asyncio.Lock())
                async with lock:
                    output, attempts = await self._run_with_retries(tool, bound)
            else:
                output, attempts = await self._run_with_retries(tool, bound)
            text, images, is_error = output.text, output.images, output.is_error
        except _Failure as failure:
            text, attempts = failure.text, failure.attempts
        except (FatalToolError, KeyboardInterrupt, SystemExit, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError) and _cancel_requested():
                raise  # the turn is being cancelled: `run` answers this call as cancelled
            text = _stop_text(call, exc)
            outcome = self._finish(call, tool, text, True, (), started, attempts, arguments)
            if notify is not None:
                notify(outcome)
            raise _Stop(exc, outcome) from None
        if edited is not None:
            text = EDITED_TEXT.format(arguments=json.dumps(dict(edited), default=str)) + text
        outcome = self._finish(call, tool, text, is_error, images, started, attempts, arguments)
        if notify is not None:
            notify(outcome)
        return outcome

    def _finish(
        self,
        call: ToolCall,
        tool: Tool | None,
        text: str,
        is_error: bool,
        images: tuple[Any, ...],
        started: float,
        attempts: int,
        arguments: Mapping[str, Any] | None,
    ) -> ToolCallFinished:
        limit = self._max_output
        if tool is not None and tool.max_output is not None:
            limit = tool.max_output
        result = ToolResult(call.id, call.name, truncate(text, limit), is_error, images)
        took = time.perf_counter() - started
        return ToolCallFinished(call, result, text, took, attempts, arguments=arguments)

    async def _run_with_retries(self, tool: Tool, bound: BoundCall) -> tuple[ToolOutput, int]:
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
                text = f"{failure.text} (after {attempt_number} attempts)"
                raise _Failure(text, attempt_number) from None
            failure.attempts = attempt_number
            raise
        except retry_on as exc:
            text = _failure(tool.name, exc).text
            if attempt_number > 1:
                text = f"{text} (after {attempt_number} attempts)"
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
            raise _TimedOut(f"{tool.name} timed out after {seconds:g}s") from exc
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
            return f"the tool call has no tool name; the tools available are: {self._available}"
        return f"unknown tool {name!r}; the tools available are: {self._available}"


class _TimedOut(_Failure, TimeoutError):
    """Our own deadline expired: retryable like any TimeoutError, worded for the model."""


def _failure(tool_name: str, exc: BaseException) -> _Failure:
    """What the model reads: the message of errors it can fix, only the type of the others."""
    if isinstance(exc, (ToolError, TypeError, ValueError)):
        return _Failure(str(exc) or type(exc).__name__)
    return _unexpected(tool_name, exc)


def _unexpected(tool_name: str, exc: BaseException) -> _Failure:
    logger.error("tool %s failed", tool_name, exc_info=exc)
    return _Failure(f"{tool_name} failed: {type(exc).__name__}")


def _cancel_requested() -> bool:
    """True when someone cancelled the current task (not a tool raising CancelledError itself)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _stop_text(call: ToolCall, error: BaseException) -> str:
    return f"{call.name} stopped the run: {type(error).__name__}: {error}".rstrip(": ")


def _stopped(call: ToolCall, error: BaseException) -> ToolCallFinished:
    text = _stop_text(call, error)
    result = ToolResult(call.id, call.name, text, is_error=True)
    return ToolCallFinished(call, result, text, 0.0, 0)


def _cancelled(call: ToolCall) -> ToolCallFinished:
    result = ToolResult(call.id, call.name, CANCELLED_TEXT, is_error=True)
    return ToolCallFinished(call, result, CANCELLED_TEXT, 0.0, 0, cancelled=True)


def parse_arguments(raw: str | Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The call's arguments as a mapping; `""`, whitespace and `null` mean no arguments.

    Raises `_Failure` with the parser's message for text that is not a JSON object.
    """
    if isinstance(raw, Mapping):
        return raw
    text = (raw or "").strip()
    if not text or text == "null":
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        preview = text if len(text) <= _RAW_PREVIEW else text[:_RAW_PREVIEW] + "..."
        raise _Failure(f"arguments are not valid JSON ({exc}); received: {preview}") from None
    if not isinstance(value, dict):
        raise _Failure(
            f"arguments must be a JSON object of parameter names to values, "
            f"got {type(value).__name__}: {text[:_RAW_PREVIEW]}"
        )
    return value


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
