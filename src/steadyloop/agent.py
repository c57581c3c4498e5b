"""`Agent`: a model, its tools and its limits; `run`, `run_sync` and `stream` start runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from steadyloop.compaction import Compaction
from steadyloop.dispatch import Dispatcher
from steadyloop.errors import ConfigError
from steadyloop.events import Event
from steadyloop.limits import Limits, TokenEstimator, estimate_tokens
from steadyloop.loop import Run
from steadyloop.messages import Message
from steadyloop.models import Model, resolve_model
from steadyloop.result import RunResult
from steadyloop.retry import Backoff
from steadyloop.tools import Tool, Toolset, as_tool

__all__ = ["Agent"]

# Enough threads that a turn's blocking tools really run at once (the default pool has
# min(32, cores + 4) threads: 6 on a two-core machine).
TOOL_THREADS = 32


class Agent:
    """A model, the tools it may call, and the limits of every run.

    Args:
        model: a `Model`, or a spec string such as "openai:gpt-4.1-mini" or "test"
            (None: the `STEADYLOOP_MODEL` environment variable).
        tools: `@tool` objects, plain functions, and toolsets such as MCP servers.
        instructions: the system prompt.
        limits: turn, context-token and repeat limits, checked before each model call.
        max_tool_output: characters of each tool result the model reads (head and tail kept).
        tool_timeout: seconds a tool call may take unless the tool sets its own `timeout`.
        compaction: opt-in summarising of older messages as the context fills up.
        backoff: waits between retries of tools and of model calls.
        model_retries: extra attempts of a model call that failed with a retryable error (after
            the SDK's own retries).
        estimate_tokens: the token estimate for messages appended since the provider's count.
    """

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        tools: Iterable[Tool | Toolset | Callable[..., Any]] = (),
        instructions: str | None = None,
        limits: Limits | None = None,
        max_tool_output: int = 8_000,
        tool_timeout: float = 120.0,
        compaction: Compaction | None = None,
        backoff: Backoff | None = None,
        model_retries: int = 2,
        estimate_tokens: TokenEstimator = estimate_tokens,
    ) -> None:
        if max_tool_output < 0:
            raise ConfigError(f"max_tool_output must be >= 0, got {max_tool_output}")
        if tool_timeout <= 0:
            raise ConfigError(f"tool_timeout must be > 0 seconds, got {tool_timeout}")
        if model_retries < 0:
            raise ConfigError(f"model_retries must be >= 0, got {model_retries}")
        self.model = resolve_model(model)
        self.instructions = instructions
        self.limits = limits if limits is not None else Limits()
        self.max_tool_output = max_tool_output
        self.tool_timeout = tool_timeout
        self.compaction = compaction
        self.backoff = backoff if backoff is not None else Backoff()
        self.model_retries = model_retries
        self.estimate_tokens = estimate_tokens
        self.toolsets: tuple[Toolset, ...] = tuple(t for t in tools if isinstance(t, Toolset))
        self.tools: tuple[Tool, ...] = tuple(
            as_tool(t) for t in tools if not isinstance(t, Toolset)
        )
        _check_unique(self.tools)
        self._executor: ThreadPoolExecutor | None = None
        self._dispatcher: Dispatcher | None = None if self.toolsets else self._make_dispatcher([])

    async def run(self, prompt: str, *, history: Sequence[Message] = ()) -> RunResult:
        """Runs until the model answers; raises `LimitExceeded` (with `.result`) at a limit."""
        run = Run(self, await self._dispatcher_for_run(), prompt, history)
        return await run.execute()

    def run_sync(self, prompt: str, *, history: Sequence[Message] = ()) -> RunResult:
        """`run` for code without a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(prompt, history=history))
        raise RuntimeError("run_sync() was called inside a running event loop: await run()")

    async def stream(self, prompt: str, *, history: Sequence[Message] = ()) -> AsyncIterator[Event]:
        """Runs like `run`, yielding each event as it happens; the last is `RunFinished`.

        A limit still raises `LimitExceeded` once its `LimitReached` and `RunFinished` events
        have been yielded. Leaving the loop early cancels the run.
        """
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        run = Run(
            self,
            await self._dispatcher_for_run(),
            prompt,
            history,
            queue.put_nowait,
            streaming=True,
        )
        task = asyncio.create_task(run.execute())
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def aclose(self) -> None:
        """Stops toolsets (MCP servers), releases the model's connections and tool threads."""
        for toolset in self.toolsets:
            await toolset.aclose()
        await self.model.aclose()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _dispatcher_for_run(self) -> Dispatcher:
        if self._dispatcher is not None:
            return self._dispatcher
        extra: list[Tool] = []
        for toolset in self.toolsets:
            extra.extend(await toolset.tools())
        return self._make_dispatcher(extra)

    def _make_dispatcher(self, extra: Sequence[Tool]) -> Dispatcher:
        tools = (*self.tools, *extra)
        _check_unique(tools)
        return Dispatcher(
            {t.name: t for t in tools},
            tool_timeout=self.tool_timeout,
            max_output=self.max_tool_output,
            backoff=self.backoff,
            executor=self._tool_executor,
        )

    def _tool_executor(self) -> Executor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(TOOL_THREADS, thread_name_prefix="steadyloop-tool")
        return self._executor

    def __repr__(self) -> str:
        names = ", ".join(t.name for t in self.tools)
        return f"Agent({self.model.name!r}, tools=[{names}])"


def _check_unique(tools: Sequence[Tool]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise ConfigError(
                f"two tools are named {tool.name!r}: give one another name with @tool(name=...)"
            )
        seen.add(tool.name)
