"""What `Agent.run`, `resume` and `stream` do: from the agent as it is now to a run in its logs.

`Agent` is the face: it holds the settings and says what each method means; the work behind
those methods is here. `launch_for` makes what one run gets from its agent (a `runs.Launch`): a
`RunConfig` snapshot of the agent's settings, so a change made mid-run reaches only later runs,
a dispatcher with every tool (toolsets started, the run's `final_answer` added) and the run's
spans. `steadyloop.runs` then logs the run and runs it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from steadyloop import runs, sessions
from steadyloop.config import RunConfig
from steadyloop.messages import Message, Prompt, UserMessage, user_message
from steadyloop.result import RunResult
from steadyloop.tracing.setup import run_tracing

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.approvals import Decisions
    from steadyloop.events import Event
    from steadyloop.toolchanges import Listing
    from steadyloop.tracing.spans import Tracing

__all__ = ["launch_for", "launch_listing", "resume", "run", "run_sync", "snapshot", "stream"]

T = TypeVar("T")


def snapshot(agent: Agent[Any]) -> RunConfig:
    """`agent`'s settings as a run that starts now takes them."""
    return RunConfig(
        model=agent.model, instructions=agent.instructions, limits=agent.limits,
        max_tool_output=agent.max_tool_output, tool_timeout=agent.tool_timeout,
        compaction=agent.compaction, backoff=agent.backoff, model_retries=agent.model_retries,
        estimate_tokens=agent.estimate_tokens, effects=agent.effects, approver=agent.approver,
        output_check=agent.output_check, cache=agent.cache, durability=agent.durability,
        metadata=dict(agent.metadata),
    )  # fmt: skip


def launch_for(
    agent: Agent[Any],
    output: Any,
    deps: Any,
    on_event: runs.OnEvent | None,
    caller: Tracing | None = None,
    listings: tuple[Listing, ...] = (),
) -> runs.Launch:
    """What one run gets from `agent` as it is now: a snapshot of its settings, a dispatcher
    with every tool (those its toolsets listed in `listings`, the `final_answer` of the run's
    `output` type), spans. An agent with toolsets is launched by `launch_listing`, which lists
    them first. `caller`: the spans of the run whose tool call starts this one (a sub-agent's
    run), which traces it too unless `agent` has its own tracer provider."""
    config = snapshot(agent)
    answer = agent._answers.for_run(output)
    tracing = run_tracing(agent.tracer_provider, agent.trace_content, agent.model)
    if caller is not None and agent.tracer_provider is None:
        tracing = caller.for_child(agent.model)
    dispatcher, watch = agent._toolbox.for_run(config, tracing, answer, listings)
    return runs.Launch(config, dispatcher, tracing, answer, deps, on_event, watch)


async def launch_listing(
    agent: Agent[Any],
    output: Any,
    deps: Any,
    on_event: runs.OnEvent | None,
    caller: Tracing | None = None,
) -> runs.Launch:
    """`launch_for` once `agent`'s toolsets have listed their tools (started on first use)."""
    listings = await agent._toolbox.listed()
    return launch_for(agent, output, deps, on_event, caller, listings)


def run(
    agent: Agent[Any],
    prompt: Prompt,
    *,
    history: Sequence[Message],
    output: Any,
    deps: Any,
    on_event: runs.OnEvent | None,
    run_id: str | None,
    if_exists: runs.IfExists,
    session: str | None,
    fork_from: str | None,
) -> Coroutine[Any, Any, RunResult[Any]]:
    """`Agent.run`: a new run, or, for a `run_id` the log holds, what `if_exists` says. Not a
    coroutine of its own: a new run keeps nothing of it on the stack while it goes on."""
    message = user_message(prompt)  # a prompt that is no prompt fails here, first
    sessions.check(agent.store, session, fork_from, history)
    runs.check_run_id(run_id, if_exists)
    if run_id is not None:
        return _named(agent, message, history, on_event, output, deps, run_id, if_exists,
                      session, fork_from)  # fmt: skip
    return _start(agent, message, history, on_event, output, deps, None, session, fork_from)


async def _named(
    agent: Agent[Any], message: UserMessage, history: Sequence[Message],
    on_event: runs.OnEvent | None, output: Any, deps: Any, run_id: str,
    if_exists: runs.IfExists, session: str | None, fork_from: str | None,
) -> RunResult[Any]:  # fmt: skip
    """A run the caller named: the log's run of that id as `if_exists` says, else a new one."""
    store = runs.require_store(agent.store, "run(run_id=...)")
    answer_type = agent._answers.default if output is None else output
    existing = await runs.existing_run(store, run_id, if_exists, answer_type)
    if isinstance(existing, RunResult):
        return existing
    if existing == "resume":
        resumed: RunResult[Any] = await agent.resume(
            run_id, deps=deps, output=output, on_event=on_event
        )
        return resumed
    return await _start(agent, message, history, on_event, output, deps, run_id, session, fork_from)


async def resume(
    agent: Agent[Any],
    run: str | RunResult[Any],
    decisions: Decisions | None,
    deps: Any,
    output: Any,
    on_event: runs.OnEvent | None,
) -> RunResult[Any]:
    """`Agent.resume`: a paused result goes on without the log when it has no id or the agent
    no log; anything else is claimed and goes on from the log."""
    ready = functools.partial(launch_listing, agent, output, deps, on_event)
    if isinstance(run, RunResult) and (run.run_id is None or agent.store is None):
        return await runs.resume_paused(run, decisions, ready)
    store = runs.require_store(agent.store, "resume")
    name = run if isinstance(run, str) else str(run.run_id)
    go_on = functools.partial(runs.resume_logged, store, name, decisions, ready)
    return await sessions.resuming(store, name, go_on)


def stream(
    agent: Agent[Any],
    prompt: Prompt,
    history: Sequence[Message],
    output: Any,
    deps: Any,
    session: str | None,
    fork_from: str | None,
) -> AsyncGenerator[Event, None]:
    """`Agent.stream`'s events: a bad prompt or session fails here, before the run starts."""
    message = user_message(prompt)
    sessions.check(agent.store, session, fork_from, history)

    def start(on_event: runs.OnEvent) -> Coroutine[Any, Any, RunResult[Any]]:
        return _start(agent, message, history, on_event, output, deps, None, session, fork_from)

    return runs.streamed(start)


def run_sync(start: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`start()` run to its end on a new event loop; a `RuntimeError` inside a running one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(start())
    raise RuntimeError("run_sync() was called inside a running event loop: await run()")


def _start(
    agent: Agent[Any], message: UserMessage, history: Sequence[Message],
    on_event: runs.OnEvent | None, output: Any, deps: Any, run_id: str | None,
    session: str | None, fork_from: str | None,
) -> Coroutine[Any, Any, RunResult[Any]]:  # fmt: skip
    """A new run of `message` (see `runs.start_new`). Not a coroutine of its own when the
    agent has no toolsets to list first: nothing of it stays on the stack while the run goes
    on."""
    if agent._toolbox.has_toolsets:
        return _start_listing(agent, message, history, on_event, output, deps, run_id,
                              session, fork_from)  # fmt: skip
    return runs.start_new(
        launch_for(agent, output, deps, on_event),
        agent.store, message, history, run_id, session, fork_from,
    )  # fmt: skip


async def _start_listing(
    agent: Agent[Any], message: UserMessage, history: Sequence[Message],
    on_event: runs.OnEvent | None, output: Any, deps: Any, run_id: str | None,
    session: str | None, fork_from: str | None,
) -> RunResult[Any]:  # fmt: skip
    """`_start` of an agent with toolsets. The launch is handed on, not kept: this frame stays
    while the run goes on, and the run keeps what it needs of it."""
    return await runs.start_new(
        await launch_listing(agent, output, deps, on_event),
        agent.store, message, history, run_id, session, fork_from,
    )  # fmt: skip
