"""`Agent`, the face of the library: a model, its tools and its limits, and the methods that run
it (`steadyloop.launch` prepares each run, `steadyloop.runs` logs it, `steadyloop.loop` runs it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from steadyloop import launch, runs
from steadyloop.approvals import Approver, Decisions
from steadyloop.cache import Cache, resolve_cache
from steadyloop.compaction import Compaction
from steadyloop.config import check_settings
from steadyloop.context import Instructions
from steadyloop.effects import Effects, nest
from steadyloop.errors import ConfigError
from steadyloop.events import Event
from steadyloop.limits import Limits, TokenEstimator, estimate_tokens
from steadyloop.messages import Message, Prompt
from steadyloop.models import Model, resolve_model
from steadyloop.output import AnswerTools, OutputCheck
from steadyloop.result import OutputT, RunResult
from steadyloop.retry import Backoff
from steadyloop.runs import IfExists
from steadyloop.toolbox import Toolbox
from steadyloop.tools import Tool, Toolset, as_tool

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from opentelemetry.trace import TracerProvider

    from steadyloop.store import RunLog
    from steadyloop.tools import Gate

__all__ = ["Agent", "IfExists"]

T = TypeVar("T")
OnEvent = Callable[[Event], None]


class Agent(Generic[OutputT]):
    """A model, the tools it may call, and the limits of every run.

    Args:
        model: a `Model`, or a spec string such as "openai:gpt-4.1-mini" or "test"
            (None: the `STEADYLOOP_MODEL` environment variable).
        tools: `@tool` objects, plain functions, and toolsets such as MCP servers.
        instructions: the system prompt, or `fn(ctx: RunContext) -> str` (sync or async) that
            makes it as each run starts (the text it makes is logged with the run).
        limits: turn, context-token and repeat limits, checked before each model call.
        max_tool_output: characters of each tool result the model reads (head and tail kept).
        tool_timeout: seconds a tool call may take unless the tool sets its own `timeout`.
        compaction: opt-in summarising of older messages as the context fills up.
        backoff: waits between retries of tools and of model calls.
        model_retries: extra attempts of a model call after a retryable error (after the SDK's).
        estimate_tokens: the token estimate for messages appended since the provider's count.
        store: the run log: an open `RunLog`, or a SQLite file's path or a URL (`sqlite:///PATH`,
            `postgresql://...`) to open, closed again by `aclose()`; None: no log.
        durability: "turn" (default) commits each model reply to the log before its calls start
            and each tool result before the model reads it; "batch" commits every few
            milliseconds (faster; a kill may lose the last events).
        effects: around-hooks for each model and tool call (`steadyloop.effects`), first outermost.
        metadata: extra JSON-able facts logged with each run.
        tracer_provider: trace this agent's runs to it (`steadyloop.instrument()` traces all).
        trace_content: also record prompts, instructions, replies, tool arguments, results and
            error texts on spans (off: names, ids, counts and kinds only).
        output: the answer's type (default `str`), any type pydantic validates: the model answers
            through a `final_answer` tool, `result.output` is the value. A run may pass `output=`.
        output_check: `fn(value) -> value` (sync or async) run on each answer; it may raise
            `ToolError("...")` to send the model back to work. What it returns is the output.
        approver: `fn(call: PendingCall, ctx: RunContext) -> Approve() | Deny(reason) |
            Edit(arguments) | Defer()` (sync or async) decides each call of a gated tool; without
            one such calls pause the run (`stop_reason="approval"`, `result.pending`) for `resume`.
        cache: prompt caching: True (default) is `Cache()`, False sends none, or a `Cache(...)`.
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
        cache: bool | Cache = True,
    ) -> None:
        check_settings(max_tool_output, tool_timeout, model_retries, durability, instructions)
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
        self.cache = resolve_cache(cache)
        self.tracer_provider = tracer_provider
        self.trace_content = trace_content
        self._log = runs.LogHandle(store)
        given = tuple(tools)  # read once: a generator of tools is used up by one pass
        self.toolsets = tuple(t for t in given if isinstance(t, Toolset))
        self.tools = tuple(as_tool(t) for t in given if not isinstance(t, Toolset))
        self._toolbox = Toolbox(self.tools, self.toolsets)
        self.output_check = output_check
        self._answers = AnswerTools(output, output_check, [t.name for t in self.tools])

    @property
    def effects(self) -> Effects | None:
        """The effects around each model and tool call (nested into one), or None."""
        return self._effects

    @effects.setter
    def effects(self, effects: Effects | Sequence[Effects] | None) -> None:
        """Sets the effects of later runs (an engine such as `durable()` adds its own)."""
        self._effects = nest(effects)

    # fmt: off
    @overload
    async def run(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: None = None,
        deps: Any = None, on_event: OnEvent | None = None, run_id: str | None = None,
        if_exists: IfExists = "error", session: str | None = None, fork_from: str | None = None,
    ) -> RunResult[OutputT]: ...
    @overload
    async def run(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: type[T],
        deps: Any = None, on_event: OnEvent | None = None, run_id: str | None = None,
        if_exists: IfExists = "error", session: str | None = None, fork_from: str | None = None,
    ) -> RunResult[T]: ...
    @overload
    async def run(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: Any,
        deps: Any = None, on_event: OnEvent | None = None, run_id: str | None = None,
        if_exists: IfExists = "error", session: str | None = None, fork_from: str | None = None,
    ) -> RunResult[Any]: ...
    async def run(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: Any = None,
        deps: Any = None, on_event: OnEvent | None = None, run_id: str | None = None,
        if_exists: IfExists = "error", session: str | None = None, fork_from: str | None = None,
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
        `session` continues the conversation of that name from the log (a new name starts one;
        see `steadyloop.sessions`); `fork_from` continues the transcript of that run instead.
        Either needs the run log, and takes the place of `history`.
        """
        return await launch.run(
            self, prompt, history=history, output=output, deps=deps, on_event=on_event,
            run_id=run_id, if_exists=if_exists, session=session, fork_from=fork_from,
        )

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
    async def resume(
        self, run: str | RunResult[Any], *, decisions: Decisions | None = None, deps: Any = None,
        output: Any = None, on_event: OnEvent | None = None,
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
        return await launch.resume(self, run, decisions, deps, output, on_event)

    @overload
    def run_sync(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: None = None,
        deps: Any = None, run_id: str | None = None, if_exists: IfExists = "error",
        session: str | None = None, fork_from: str | None = None,
    ) -> RunResult[OutputT]: ...
    @overload
    def run_sync(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: type[T],
        deps: Any = None, run_id: str | None = None, if_exists: IfExists = "error",
        session: str | None = None, fork_from: str | None = None,
    ) -> RunResult[T]: ...
    @overload
    def run_sync(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: Any,
        deps: Any = None, run_id: str | None = None, if_exists: IfExists = "error",
        session: str | None = None, fork_from: str | None = None,
    ) -> RunResult[Any]: ...
    def run_sync(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: Any = None,
        deps: Any = None, run_id: str | None = None, if_exists: IfExists = "error",
        session: str | None = None, fork_from: str | None = None,
    ) -> RunResult[Any]:
        """`run` for code without a running event loop."""
        return launch.run_sync(lambda: self.run(
            prompt, history=history, output=output, deps=deps, run_id=run_id,
            if_exists=if_exists, session=session, fork_from=fork_from,
        ))
    # fmt: on

    async def stream(
        self, prompt: Prompt, *, history: Sequence[Message] = (), output: Any = None,
        deps: Any = None, session: str | None = None, fork_from: str | None = None,
    ) -> AsyncIterator[Event]:  # fmt: skip
        """Runs like `run`, yielding each event as it happens; the last is `RunFinished`.

        A limit still raises `LimitExceeded` once its `LimitReached` and `RunFinished` events
        have been yielded. Leaving the loop early cancels the run.
        """
        events = launch.stream(self, prompt, history, output, deps, session, fork_from)
        async with contextlib.aclosing(events):  # leaving early cancels the run at once
            async for event in events:
                yield event

    def as_tool(
        self, *, name: str, description: str, timeout: float | None = None,
        max_calls: int | None = None, approve: Gate = False,
    ) -> Tool:  # fmt: skip
        """This agent as a tool of another agent (a sub-agent), with one parameter, `prompt`: a
        call runs this agent on the prompt alone with the caller's `deps`, as a logged child of
        the calling run that spends from its usage and cost budget (see `steadyloop.subagents`).
        `timeout` (None: the caller's `tool_timeout`), `max_calls`, `approve`: as for `@tool`."""
        from steadyloop.subagents import AgentTool

        return AgentTool(
            self, name=name, description=description, timeout=timeout, max_calls=max_calls,
            approve=approve,
        )  # fmt: skip

    def as_mcp_server(
        self, name: str = "agent", *, description: str | None = None, deps: Any = None
    ) -> MCPServer:
        """This agent as an MCP server (the MCP SDK's `MCPServer`; extra `mcp`): one tool,
        `name`, taking `{"prompt": string}`; each call is one run (logged when the agent has a
        run log, `deps` given to each). `.run()` serves it on stdio, `.streamable_http_app()` is
        its ASGI app. `description` defaults to one naming the agent's tools."""
        import importlib.util

        if importlib.util.find_spec("mcp") is None:
            raise ConfigError("serving over MCP needs the mcp SDK: pip install 'steadyloop[mcp]'")
        from steadyloop.mcp.serve import agent_server

        return agent_server(self, name, description=description, deps=deps)

    @property
    def store(self) -> RunLog | None:
        """The run log, opened on first use; None when the agent keeps no log."""
        return self._log.get()

    @store.setter
    def store(self, store: RunLog | None) -> None:
        """Logs later runs to `store`, an open log that is the caller's to close, as is one the
        agent had opened (a batch worker gives the agents it builds its log; `durable()` wraps
        an agent's log in its own)."""
        self._log = runs.LogHandle(store)

    def close_store(self) -> None:
        """Closes the run log if this agent opened it from a path or URL (a log passed in open
        belongs to the caller); it opens again on the next run."""
        self._log.close()

    async def aclose(self) -> None:
        """Stops toolsets (MCP servers), releases the model's connections and tool threads, and
        closes the run log the agent opened (committing what is queued)."""
        await self._toolbox.aclose()
        await self.model.aclose()
        await asyncio.to_thread(self.close_store)

    async def __aenter__(self) -> Agent[OutputT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        names = ", ".join(t.name for t in self.tools)
        return f"Agent({self.model.name!r}, tools=[{names}])"
