"""`Agent`: a model, its tools and its limits; `run`, `run_sync` and `stream` start runs."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from steadyloop.approvals import Approver, Decisions
from steadyloop.compaction import Compaction
from steadyloop.context import Instructions, check_deps, check_instructions
from steadyloop.dispatch import Dispatcher, ToolThreads
from steadyloop.effects import Effects, nest
from steadyloop.errors import ConfigError, LimitExceeded
from steadyloop.events import Event
from steadyloop.limits import Limits, TokenEstimator, estimate_tokens
from steadyloop.loop import Run
from steadyloop.messages import (
    AssistantMessage,
    Message,
    Prompt,
    Usage,
    UserMessage,
    user_message,
)
from steadyloop.models import Model, resolve_model
from steadyloop.output import AnswerTools, OutputCheck
from steadyloop.result import OutputT, RunResult
from steadyloop.retry import Backoff
from steadyloop.tools import Tool, Toolset, as_tool, check_unique_names
from steadyloop.tracing import run_tracing

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from steadyloop.resume import ResumePoint
    from steadyloop.store import RunLog
    from steadyloop.tracing_spans import Tracing

__all__ = ["Agent", "IfExists"]

T = TypeVar("T")
IfExists = Literal["error", "resume", "return"]
OnEvent = Callable[[Event], None]


class Agent(Generic[OutputT]):
    """A model, the tools it may call, and the limits of every run.

    Args:
        model: a `Model`, or a spec string such as "openai:gpt-4.1-mini" or "test"
            (None: the `STEADYLOOP_MODEL` environment variable).
        tools: `@tool` objects, plain functions, and toolsets such as MCP servers.
        instructions: the system prompt, or `fn(ctx: RunContext) -> str` (sync or async) that
            makes it at the start of each run (the text it makes is logged with the run).
        limits: turn, context-token and repeat limits, checked before each model call.
        max_tool_output: characters of each tool result the model reads (head and tail kept).
        tool_timeout: seconds a tool call may take unless the tool sets its own `timeout`.
        compaction: opt-in summarising of older messages as the context fills up.
        backoff: waits between retries of tools and of model calls.
        model_retries: extra attempts of a model call that failed with a retryable error (after
            the SDK's own retries).
        estimate_tokens: the token estimate for messages appended since the provider's count.
        store: the run log: an open `RunLog`, or where to open one: the path of a SQLite file
            or a URL (`sqlite:///PATH`, `postgresql://...`); None: no log. A log the agent
            opened itself is closed by `aclose()`.
        durability: "turn" (default) commits each model reply to the log before any of its
            calls starts and each tool result before the model reads it, so a kill re-runs at
            most the calls in flight; "batch" lets the log writer gather events for a few
            milliseconds (faster; a kill may lose the last of them).
        effects: around-hooks for each model call and each tool call (see
            `steadyloop.effects`); several nest, the first outermost.
        metadata: extra JSON-able facts logged with each run (the CLI records its tool files).
        tracer_provider: trace this agent's runs with OpenTelemetry, to this provider
            (`steadyloop.instrument()` traces every agent's).
        trace_content: also record prompts, instructions, replies, tool arguments and results
            and error texts on this agent's spans (off: names, ids, counts and kinds only).
        output: the type of the answer (default `str`: the text of the last reply). Any type
            pydantic validates (a model, dataclass, TypedDict, `list[...]`, `int`, ...): the
            model answers by calling a `final_answer` tool, and `result.output` is the
            validated value. A run may pass its own `output=`.
        output_check: `fn(value) -> value` (sync or async) run on each answer: the validated
            value of a typed answer, or the text of a text answer. It may raise
            `ToolError("...")` to send the model back to work with that message. What it
            returns is the output.
        approver: `fn(call: PendingCall, ctx: RunContext) -> Approve() | Deny(reason) |
            Edit(arguments) | Defer()` (sync or async) decides each call of a gated tool
            (`@tool(approve=...)`); without one every such call is deferred: the run pauses
            with `stop_reason="approval"` and `result.pending`, and `resume` continues it.
    """

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        tools: Iterable[Tool | Toolset | Callable[..., Any]] = (),
        instructions: Instructions | None = None,
        limits: Limits | None = None,
        max_tool_output: int = 8_000,
        tool_timeout: float = 120.0,
        compaction: Compaction | None = None,
        backoff: Backoff | None = None,
        model_retries: int = 2,
        estimate_tokens: TokenEstimator = estimate_tokens,
        store: RunLog | str | os.PathLike[str] | None = None,
        durability: Literal["turn", "batch"] = "turn",
        effects: Effects | Sequence[Effects] | None = None,
        metadata: Mapping[str, Any] | None = None,
        tracer_provider: TracerProvider | None = None,
        trace_content: bool = False,
        output: type[OutputT] | None = None,
        output_check: OutputCheck | None = None,
        approver: Approver | None = None,
    ) -> None:
        if max_tool_output < 0:
            raise ConfigError(f"max_tool_output must be >= 0, got {max_tool_output}")
        if tool_timeout <= 0:
            raise ConfigError(f"tool_timeout must be > 0 seconds, got {tool_timeout}")
        if model_retries < 0:
            raise ConfigError(f"model_retries must be >= 0, got {model_retries}")
        if durability not in ("turn", "batch"):
            raise ConfigError(f'durability must be "turn" or "batch", got {durability!r}')
        check_instructions(instructions)
        self.model = resolve_model(model)
        self.instructions = instructions
        self.limits = limits if limits is not None else Limits()
        self.max_tool_output = max_tool_output
        self.tool_timeout = tool_timeout
        self.compaction = compaction
        self.backoff = backoff if backoff is not None else Backoff()
        self.model_retries = model_retries
        self.estimate_tokens = estimate_tokens
        self.metadata = dict(metadata or {})
        self.durability = durability
        self._effects = nest(effects)
        self.approver = approver
        self.tracer_provider = tracer_provider
        self.trace_content = trace_content
        # A log given as a path or URL is the agent's to open and close; an open one is not.
        self._store_location = store if isinstance(store, str | os.PathLike) else None
        self._store = None if isinstance(store, str | os.PathLike) else store
        self.toolsets: tuple[Toolset, ...] = tuple(t for t in tools if isinstance(t, Toolset))
        self.tools: tuple[Tool, ...] = tuple(
            as_tool(t) for t in tools if not isinstance(t, Toolset)
        )
        check_unique_names(self.tools)
        self.output_check = output_check
        self._answers = AnswerTools(output, output_check, [t.name for t in self.tools])
        self._tool_threads = ToolThreads()
        self._dispatcher: Dispatcher | None = (
            None if self.toolsets else self._make_dispatcher([], self._effects)
        )

    @property
    def effects(self) -> Effects | None:
        """The effects around each model and tool call (nested into one), or None."""
        return self._effects

    @effects.setter
    def effects(self, effects: Effects | Sequence[Effects] | None) -> None:
        """Sets the effects of later runs (an engine such as `durable()` adds its own)."""
        self._effects = nest(effects)
        if self._dispatcher is not None:
            self._dispatcher = self._make_dispatcher([], self._effects)

    # fmt: off
    @overload
    async def run(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: None = None,
        deps: Any = None, on_event: OnEvent | None = None, run_id: str | None = None,
        if_exists: IfExists = "error",
    ) -> RunResult[OutputT]: ...
    @overload
    async def run(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: type[T],
        deps: Any = None, on_event: OnEvent | None = None, run_id: str | None = None,
        if_exists: IfExists = "error",
    ) -> RunResult[T]: ...
    @overload
    async def run(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: Any,
        deps: Any = None, on_event: OnEvent | None = None, run_id: str | None = None,
        if_exists: IfExists = "error",
    ) -> RunResult[Any]: ...
    # fmt: on
    async def run(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output: Any = None,
        deps: Any = None,
        on_event: OnEvent | None = None,
        run_id: str | None = None,
        if_exists: IfExists = "error",
    ) -> RunResult[Any]:
        """Runs until the model answers; raises `LimitExceeded` (with `.result`) at a limit.

        `prompt` is text, or a sequence of text, `Image` and `Document` parts. `output` is
        this run's answer type (default: the agent's); `deps` reaches tools that take a
        `RunContext` as `ctx.deps` (never logged). `on_event` is called with each event as it
        happens (as `stream` yields them).
        `run_id` names the run in the log (default: a new random id). When the log already has
        it, `if_exists` says what to do: "error" (a `ConfigError`), "resume" (go on from the log;
        a finished run's logged result is returned without calling the model) or "return"
        (the finished run's logged result; a `ConfigError` for one that did not finish).
        """
        message = user_message(prompt)  # a prompt that is no prompt fails here, first
        if if_exists not in ("error", "resume", "return"):
            raise ConfigError(f'if_exists must be "error", "resume" or "return", got {if_exists!r}')
        if run_id is not None and not isinstance(run_id, str):
            raise ConfigError(
                f"run_id must be a str, got {type(run_id).__name__}: pass run_id=str(...)"
            )
        if run_id is not None:
            existing = await self._existing_run(run_id, if_exists, output, deps)
            if existing is not None:
                return await existing(on_event)
        return await self._start(message, history, on_event, output, deps, run_id)

    async def _existing_run(
        self, run_id: str, if_exists: IfExists, output: Any, deps: Any
    ) -> Callable[[OnEvent | None], Awaitable[RunResult[Any]]] | None:
        """How to answer a run whose id is already logged; None when it is not (or "error")."""
        if if_exists not in ("error", "resume", "return"):
            raise ConfigError(f'if_exists must be "error", "resume" or "return", got {if_exists!r}')
        store = self._require_store("run(run_id=...)")
        if if_exists == "error":
            return None  # start_run refuses an id already in the log
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
            answer_type = self._answers.default if output is None else output
            result = await asyncio.to_thread(logged_result, store, info, answer_type)
            return lambda _: _returned(result)
        if if_exists == "return":
            raise ConfigError(
                f"run {run_id} has not finished (it is {info.status}): pass if_exists='resume' "
                "to go on with it"
            )
        return lambda on_event: self.resume(run_id, deps=deps, output=output, on_event=on_event)

    # fmt: off
    @overload
    async def resume(
        self, run: str | RunResult[Any], *, decisions: Decisions | None = None, deps: Any = None,
        output: None = None, on_event: OnEvent | None = None,
    ) -> RunResult[OutputT]: ...
    @overload
    async def resume(
        self, run: str | RunResult[Any], *, decisions: Decisions | None = None, deps: Any = None,
        output: type[T], on_event: OnEvent | None = None,
    ) -> RunResult[T]: ...
    @overload
    async def resume(
        self, run: str | RunResult[Any], *, decisions: Decisions | None = None, deps: Any = None,
        output: Any, on_event: OnEvent | None = None,
    ) -> RunResult[Any]: ...
    # fmt: on
    async def resume(
        self,
        run: str | RunResult[Any],
        *,
        decisions: Decisions | None = None,
        deps: Any = None,
        output: Any = None,
        on_event: OnEvent | None = None,
    ) -> RunResult[Any]:
        """Continues a run: one paused for approval, or one killed, interrupted or failed.

        `run` is a run id (needs the run log) or a paused `RunResult` (works without a log).
        A paused run needs `decisions`, one per waiting call, keyed by call id or by the
        `PendingCall` itself: `Approve()`, `Deny(reason)` or `Edit(arguments)`; a decision made
        for other arguments, or a run not waiting, is a `ConfigError` and nothing runs. Calls
        that finished are not run again; other unfinished ones are run again if their tool is
        `idempotent`, otherwise answered with an error saying they were interrupted. `deps` and
        `output` are given again, as to `run` (they are not logged).
        """
        from steadyloop.resume import paused_point, resume_point
        from steadyloop.store.ids import find_run

        if isinstance(run, RunResult) and (run.run_id is None or self.store is None):
            await self._require_tools({c.call_id: c.name for c in run.pending}, run.run_id)
            point = paused_point(run, decisions)
            return await _traced(await self._resumed(point, None, on_event, output, deps), None)
        store = self._require_store("resume")
        name = run if isinstance(run, str) else str(run.run_id)
        run_id = await asyncio.to_thread(lambda: find_run(store, name).id)
        await _store_io(store, store.claim, run_id)
        try:
            point = await asyncio.to_thread(resume_point, store, run_id, decisions)
            await self._require_tools(_waiting_tools(point), run_id)
            resumed = await self._resumed(point, store, on_event, output, deps)
            # Marking waits for the write (which may wait on another connection): off the loop.
            await asyncio.to_thread(store.mark, run_id, "running")
        except BaseException:
            await _store_io(store, store.release, run_id)
            raise
        return await _traced(resumed, store)

    async def _require_tools(self, waiting: Mapping[str, str], run_id: str | None) -> None:
        """`ConfigError`, before anything is decided, run or logged, when a call waiting for a
        decision (`waiting`: tool name by call id) names a tool this agent lacks: the call
        would be answered "unknown tool" and its decision lost, so the run stays paused."""
        if not waiting:
            return
        have = {tool.name for tool in (await self._dispatcher_for_run()).tools}
        missing = sorted({name for name in waiting.values() if name not in have})
        if missing:
            calls = ", ".join(f"{c} ({name})" for c, name in waiting.items() if name in missing)
            raise ConfigError(
                f"run {run_id or '(not logged)'} waits for a decision on {calls}, but this agent "
                f"has no tool {', '.join(missing)}; nothing was run and the run stays paused: "
                "resume it with the agent that has the tool"
            )

    async def _resumed(
        self,
        point: ResumePoint,
        store: RunLog | None,
        on_event: OnEvent | None,
        output: Any,
        deps: Any,
    ) -> Run:
        """The run that continues from `point` (logged to `store` when there is one)."""
        answer = self._answers.for_run(output)
        tracing = self._tracing()
        notify, commit = on_event, None
        if store is not None and point.run_id is not None:
            # The recorder reads where the logged run stands: off the loop, like every read.
            record = await asyncio.to_thread(self._recorder, store, point.run_id)
            notify = _fan_out(record, on_event)
            commit = self._committer(store, point.run_id)
        dispatcher = await self._dispatcher_for_run(tracing, answer)
        check_deps(dispatcher.tools, deps)
        return Run(
            self, dispatcher, point.prompt, point.messages, notify,
            streaming=on_event is not None, run_id=point.run_id, commit=commit,
            turns_used=point.turns_used, usage=point.usage, recovered=point.recovered,
            tracing=tracing, answer=answer, deps=deps,
            decisions=point.decisions_for(dispatcher.tools),
        )  # fmt: skip

    async def _start(
        self,
        prompt: Prompt | UserMessage,
        history: Sequence[Message],
        stream_to: OnEvent | None,
        output: Any,
        deps: Any,
        run_id: str | None = None,
    ) -> RunResult[Any]:
        message = prompt if isinstance(prompt, UserMessage) else user_message(prompt)
        answer = self._answers.for_run(output)
        tracing = self._tracing()
        dispatcher = await self._dispatcher_for_run(tracing, answer)
        check_deps(dispatcher.tools, deps)  # before the run is logged, so nothing is left behind
        store = self.store
        notify, commit = stream_to, None
        if store is not None:
            start = functools.partial(
                store.start_run,
                model=self.model.name,
                prompt=message.text,
                history=history,
                config={**self.describe(), "tools": [t.name for t in dispatcher.tools]},
                run_id=run_id,
            )
            # A run id of the caller's is looked up in the log first: off the event loop.
            run_id = await (
                asyncio.to_thread(start) if run_id or store.blocking_io else _now(start)
            )
            notify = _fan_out(self._recorder(store, run_id, len(history)), stream_to)
            commit = self._committer(store, run_id)
        run = Run(
            self, dispatcher, message, history, notify, streaming=stream_to is not None,
            run_id=run_id, commit=commit, tracing=tracing, answer=answer, deps=deps,
        )  # fmt: skip
        return await _traced(run, store)

    def _recorder(
        self, store: RunLog, run_id: str, next_seq: int | None = None
    ) -> Callable[[Event], None]:
        return store.recorder(run_id, next_seq)

    def _committer(self, store: RunLog, run_id: str) -> Callable[[], Awaitable[None]] | None:
        """The write-ahead points of a "turn" run: None (no forced commits) for "batch"."""
        if self.durability == "batch":
            return None
        return functools.partial(store.commit, run_id)

    # fmt: off
    @overload
    def run_sync(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: None = None,
        deps: Any = None, run_id: str | None = None, if_exists: IfExists = "error",
    ) -> RunResult[OutputT]: ...
    @overload
    def run_sync(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: type[T],
        deps: Any = None, run_id: str | None = None, if_exists: IfExists = "error",
    ) -> RunResult[T]: ...
    @overload
    def run_sync(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: Any,
        deps: Any = None, run_id: str | None = None, if_exists: IfExists = "error",
    ) -> RunResult[Any]: ...
    # fmt: on
    def run_sync(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output: Any = None,
        deps: Any = None,
        run_id: str | None = None,
        if_exists: IfExists = "error",
    ) -> RunResult[Any]:
        """`run` for code without a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            run = self.run(
                prompt, history=history, output=output, deps=deps, run_id=run_id,
                if_exists=if_exists,
            )  # fmt: skip
            return asyncio.run(run)
        raise RuntimeError("run_sync() was called inside a running event loop: await run()")

    async def stream(
        self,
        prompt: Prompt,
        *,
        history: Sequence[Message] = (),
        output: Any = None,
        deps: Any = None,
    ) -> AsyncIterator[Event]:
        """Runs like `run`, yielding each event as it happens; the last is `RunFinished`.

        A limit still raises `LimitExceeded` once its `LimitReached` and `RunFinished` events
        have been yielded. Leaving the loop early cancels the run.
        """
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        task = asyncio.create_task(self._start(prompt, history, queue.put_nowait, output, deps))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    @property
    def store(self) -> RunLog | None:
        """The run log, opened on first use; None when the agent keeps no log."""
        if self._store is None and self._store_location is not None:
            from steadyloop.store import open_store

            self._store = open_store(self._store_location)
        return self._store

    @store.setter
    def store(self, store: RunLog | None) -> None:
        """Logs later runs to `store`, an open log that is the caller's to close, as is one the
        agent had opened (a batch worker gives the agents it builds its log; `durable()` wraps
        an agent's log in its own)."""
        self._store_location = None
        self._store = store

    def close_store(self) -> None:
        """Closes the run log if this agent opened it from a path or URL (a log passed in open
        belongs to the caller); it opens again on the next run."""
        if self._store_location is not None and self._store is not None:
            self._store.close()
            self._store = None

    def _require_store(self, action: str) -> RunLog:
        store = self.store
        if store is None:
            raise ConfigError(f"{action} needs a run log: create the Agent with store=PATH")
        return store

    def describe(self) -> dict[str, Any]:
        """The agent's settings as logged with each run."""
        limits = self.limits
        return {
            "model": self.model.name,
            # callable instructions: the text each run made is logged with it instead
            "instructions": self.instructions if not callable(self.instructions) else None,
            "limits": {
                "max_turns": limits.max_turns,
                "max_context_tokens": limits.max_context_tokens,
                "max_repeats": limits.max_repeats,
                "max_cost_usd": limits.max_cost_usd,
                "max_same_results": limits.max_same_results,
            },
            "max_tool_output": self.max_tool_output,
            "tool_timeout": self.tool_timeout,
            "tools": [t.name for t in self.tools],
            "compaction": (
                {"keep_recent": self.compaction.keep_recent, "trigger": self.compaction.trigger}
                if self.compaction is not None
                else None
            ),
            **self.metadata,
        }

    async def aclose(self) -> None:
        """Stops toolsets (MCP servers), releases the model's connections and tool threads, and
        closes the run log the agent opened (committing what is queued)."""
        for toolset in self.toolsets:
            await toolset.aclose()
        await self.model.aclose()
        self._tool_threads.shutdown()
        await asyncio.to_thread(self.close_store)

    async def __aenter__(self) -> Agent[OutputT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _tracing(self) -> Tracing | None:
        """The spans of a run that starts now; None (the usual case) when it is not traced."""
        return run_tracing(self.tracer_provider, self.trace_content, self.model)

    async def _dispatcher_for_run(
        self, tracing: Tracing | None = None, answer: Tool | None = None
    ) -> Dispatcher:
        if self._dispatcher is not None and tracing is None and answer is None:
            return self._dispatcher
        started = await asyncio.gather(*(toolset.tools() for toolset in self.toolsets))
        extra = [tool for tools in started for tool in tools]
        effects = self.effects if tracing is None else tracing.around(self.effects)
        return self._make_dispatcher(extra if answer is None else [*extra, answer], effects)

    def _make_dispatcher(self, extra: Sequence[Tool], effects: Effects | None) -> Dispatcher:
        tools = (*self.tools, *extra)
        check_unique_names(tools)
        return Dispatcher(
            {t.name: t for t in tools},
            tool_timeout=self.tool_timeout,
            max_output=self.max_tool_output,
            backoff=self.backoff,
            executor=self._tool_threads.get,
            effects=effects,
        )

    def __repr__(self) -> str:
        names = ", ".join(t.name for t in self.tools)
        return f"Agent({self.model.name!r}, tools=[{names}])"


async def _traced(run: Run, store: RunLog | None) -> RunResult[Any]:
    """Runs `run` in its logs: the run log, and its spans when it is traced."""
    if run.tracing is None:
        return await _logged(run, store)
    return await run.tracing.run(run.run_id, functools.partial(_logged, run, store))


async def _logged(run: Run, store: RunLog | None) -> RunResult[Any]:
    """Runs `run`, marking in the log how it ended when it did not end by answering, and
    releasing its claim however it ended."""
    if store is None or run.run_id is None:
        return await run.execute()
    run_id = run.run_id
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


def _waiting_tools(point: ResumePoint) -> dict[str, str]:
    """The tool each call waiting for a decision at `point` names, by call id."""
    last = next((m for m in reversed(point.messages) if isinstance(m, AssistantMessage)), None)
    calls = last.tool_calls if last is not None else ()
    return {call.id: call.name for call in calls if call.id in point.decisions}


async def _store_io(store: RunLog, call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` on a store: off the event loop when the store may wait on the network."""
    if store.blocking_io:
        return await asyncio.to_thread(call, *args)
    return call(*args)


async def _now(call: Callable[[], T]) -> T:
    return call()


async def _returned(result: RunResult[Any]) -> RunResult[Any]:
    return result


def _fan_out(
    first: Callable[[Event], None], second: Callable[[Event], None] | None
) -> Callable[[Event], None]:
    if second is None:
        return first

    def both(event: Event) -> None:
        first(event)
        second(event)

    return both
