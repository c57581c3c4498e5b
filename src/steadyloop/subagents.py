"""Sub-agents: `Agent.as_tool` makes an agent a tool of another agent's runs.

A call runs the agent on the call's `prompt` alone (none of the caller's conversation), with the
calling run's `deps`, and its answer is the call's result. Beyond a tool that awaits
`other.run(...)`:

- the child run is logged (in the child agent's log, or else the caller's) with the calling
  run and call as its parent (`RunLog.children`), under an id derived from them, so a resumed
  caller finds it: a child that finished is never run again (its logged result answers the
  call), one that was cut short goes on from its log;
- what the child spent (tokens, requests, tool calls, cost) is added to the caller's usage,
  however the child ended (answered, stopped or failed, logged or not), and the caller's
  remaining cost budget bounds the child's: the children one turn's calls start share it, each
  model call charged as its reply arrives (`steadyloop.costshare`), so together they cannot
  spend more than the caller had left;
- a child stopped by a limit, or paused for approval, answers the call with an error result
  the caller's model reads; a `FatalToolError` in the child stops the caller too;
- when the caller is traced, so is the child, its spans under the call's `execute_tool` span.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from steadyloop import runs, texts
from steadyloop.context import RunContext
from steadyloop.cost import has_price
from steadyloop.costshare import CostShare
from steadyloop.errors import FatalToolError, LimitExceeded
from steadyloop.failures import failure_text
from steadyloop.launch import launch_listing
from steadyloop.messages import Usage, UserMessage
from steadyloop.result import RunResult
from steadyloop.start import RunStart
from steadyloop.store.rows import RunLinks
from steadyloop.tools import FunctionTool, Gate, ToolOutput, render_value

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.loop import Run
    from steadyloop.store import RunInfo, RunLog

__all__ = ["AgentTool", "child_run_id"]

# Fixed, so that a call's child run id is the same in every process.
_CHILD_IDS = uuid.UUID("5b0c8f0e-6a53-4d1e-9a55-0d6c1f4e2a71")
_ANSWERED = ("end_turn", "max_tokens")
# The cost budget the children of each calling run's latest turn share: (turn, share).
_SHARES: weakref.WeakKeyDictionary[Run, tuple[int, CostShare]] = weakref.WeakKeyDictionary()


def child_run_id(parent_run_id: str, call_id: str) -> str:
    """The id of the run that call `call_id` of run `parent_run_id` starts: always the same for
    that call, so a resumed caller finds the child its call started. 32 hex characters, like a
    generated id, so it can be shortened as `steadyloop logs` shows it."""
    return uuid.uuid5(_CHILD_IDS, f"{parent_run_id}\0{call_id}").hex


@dataclass(frozen=True, slots=True)
class _Answer:
    """How a call of the sub-agent ended: the text the caller's model reads, whether it is an
    error, and what the child run spent."""

    text: str
    is_error: bool
    usage: Usage


class AgentTool(FunctionTool):
    """An agent as a tool: one required string parameter, `prompt`; see the module docstring.

    Idempotent: a call found unfinished when the caller resumes runs again, which goes on with
    the child run it had started (found by its id) rather than starting another.
    """

    starts_runs = True

    def __init__(
        self,
        agent: Agent[Any],
        *,
        name: str,
        description: str,
        timeout: float | None = None,
        max_calls: int | None = None,
        approve: Gate = False,
    ) -> None:
        async def call(prompt: str, ctx: RunContext[Any]) -> _Answer:
            """Runs the agent on one task.

            Args:
                prompt: the task, with all the agent needs to know (it sees nothing else).
            """
            return await self._answer(prompt, ctx)

        super().__init__(
            call, name=name, description=description, timeout=timeout, idempotent=True,
            approve=approve, max_calls=max_calls,
        )  # fmt: skip
        self.agent = agent

    def render(self, value: Any) -> ToolOutput:
        assert isinstance(value, _Answer)
        return ToolOutput(value.text, is_error=value.is_error, usage=value.usage)

    async def _answer(self, prompt: str, ctx: RunContext[Any]) -> _Answer:
        """Runs (or resumes, or reads back) the child run of this call, as an answer."""
        caller = runs.CALLER.get()
        run = caller.run if caller is not None else None
        store = self.agent.store
        if store is None and caller is not None:
            store = caller.store
        links = None
        if ctx.run_id is not None and ctx.call_id is not None:
            links = RunLinks(parent_run_id=ctx.run_id, parent_call_id=ctx.call_id)
        child_id = None
        if store is not None and links is not None:
            child_id = child_run_id(str(links.parent_run_id), str(links.parent_call_id))
        budget = await self._cost_limit(run, ctx)
        if isinstance(budget, _Answer):
            return budget
        spent: list[Usage] = []  # what the child run spent, once it has ended
        launch = functools.partial(self._launch, run, ctx.deps, budget, spent.append)
        try:
            return await self._run(prompt, store, child_id, links, launch)
        except LimitExceeded as exc:
            return self._stopped(str(exc), exc.result)
        except FatalToolError:
            raise
        except Exception as exc:  # the child failed: the caller's model reads how, as for any tool
            usage = spent[-1] if spent else await _logged_usage(store, child_id)
            return _Answer(failure_text(self.name, exc), True, usage)

    async def _run(
        self,
        prompt: str,
        store: RunLog | None,
        child_id: str | None,
        links: RunLinks | None,
        prepare: Callable[[], Awaitable[runs.Launch]],
    ) -> _Answer:
        """The child run: started, or found in the log by its id (read back when it ended,
        resumed when it was cut short)."""
        fresh = RunStart.fresh(UserMessage(prompt), (), child_id)
        info = None if store is None or child_id is None else await asyncio.to_thread(
            store.find, child_id
        )  # fmt: skip
        if store is None or info is None:
            return self._answered(await runs.start(await prepare(), fresh, store, links))
        if info.finished:
            return await asyncio.to_thread(self._logged, store, info)
        from steadyloop.resume import PAUSED, waiting_calls

        if info.stop_reason == "approval" and info.status in PAUSED:
            pending = await asyncio.to_thread(waiting_calls, store, info.id)
            return self._paused(info.id, [f"{c.call_id} ({c.name})" for c in pending], info.usage)
        return self._answered(await runs.resume_logged(store, info.id, None, prepare))

    async def _launch(
        self,
        caller: Run | None,
        deps: Any,
        budget: tuple[float, CostShare] | None,
        ended: Callable[[Usage], None],
    ) -> runs.Launch:
        """The child's launch: traced under the caller when the caller is, its cost limit
        bounded by the caller's budget, which it shares with its siblings, told no events (the
        caller's stream has the call) but told what it spent when it ends."""
        tracing = caller.tracing if caller is not None else None
        launch = await launch_listing(self.agent, None, deps, None, caller=tracing)
        launch = dataclasses.replace(launch, ended=ended)
        if budget is None:
            return launch
        cost_limit, share = budget
        limits = dataclasses.replace(launch.config.limits, max_cost_usd=cost_limit)
        config = dataclasses.replace(launch.config, limits=limits)
        return dataclasses.replace(launch, config=config, share=share)

    async def _cost_limit(
        self, caller: Run | None, ctx: RunContext[Any]
    ) -> tuple[float, CostShare] | _Answer | None:
        """The child's cost limit and the budget it shares with the turn's other children: the
        caller's budget left (its limit minus what it has cost so far, children included, and
        what the turn's children running meanwhile have spent) or the child's own limit when
        lower. None to leave the child's limits as they are (no caller budget, or a child model
        with no known price). An answer, and no child, when nothing is left."""
        limit = caller.config.limits.max_cost_usd if caller is not None else None
        if caller is None or limit is None:
            return None
        share = _shared(caller, ctx, limit)
        if share.reached() is not None:
            spent = (ctx.usage.cost_usd or 0.0) + share.spent
            text = texts.NO_BUDGET.format(cost=f"{spent:.4f}", limit=f"{limit:g}", tool=self.name)
            return _Answer(text, True, Usage())
        if not await has_price(self.agent.model):
            return None
        own = self.agent.limits.max_cost_usd
        return (share.left if own is None else min(share.left, own)), share

    def _answered(self, result: RunResult[Any]) -> _Answer:
        """The answer a child run that returned gives: its output, or why it has none yet."""
        if result.stop_reason == "approval":
            calls = [f"{c.call_id} ({c.name})" for c in result.pending]
            return self._paused(result.run_id, calls, result.usage)
        return _Answer(render_value(result.output), False, result.usage)

    def _logged(self, store: RunLog, info: RunInfo) -> _Answer:
        """The answer of a child run that ended before: its logged answer, or its limit stop."""
        from steadyloop.resume import logged_result

        result = logged_result(store, info)
        if info.stop_reason in _ANSWERED:
            return self._answered(result)
        events = store.events(info.id)
        message = next(
            (e.data["message"] for e in reversed(events) if e.kind == "limit"),
            str(info.stop_reason),
        )
        return self._stopped(message, result)

    def _stopped(self, message: str, result: RunResult[Any]) -> _Answer:
        """A child stopped by a limit: the limit's message, then its last reply's text."""
        text = texts.CHILD_STOPPED.format(tool=self.name, message=message)
        if result.text:
            text += texts.CHILD_LAST_REPLY.format(text=result.text)
        return _Answer(text, True, result.usage)

    def _paused(self, run_id: str | None, calls: list[str], usage: Usage) -> _Answer:
        text = texts.CHILD_PAUSED.format(tool=self.name, calls=", ".join(calls), run_id=run_id)
        return _Answer(text, True, usage)


def _shared(caller: Run, ctx: RunContext[Any], limit: float) -> CostShare:
    """The budget the children of the caller's current turn share: what the caller had left
    when the turn's calls started (`ctx.usage` is the same for all of them), within the
    budget the caller itself shares, if any. The caller adds its children's spending to its
    own usage once every call of the turn is answered, so each turn starts a new share."""
    turn = ctx.turn
    found = _SHARES.get(caller)
    if found is not None and found[0] == turn:
        return found[1]
    share = CostShare(limit - (ctx.usage.cost_usd or 0.0), caller.share)
    _SHARES[caller] = (turn, share)
    return share


async def _logged_usage(store: RunLog | None, child_id: str | None) -> Usage:
    """What a child run that failed before it got going spent, as its log has it (an earlier
    attempt's, when a resumed caller runs the call again; nothing without a log)."""
    if store is None or child_id is None:
        return Usage()
    info = await asyncio.to_thread(store.find, child_id)
    return info.usage if info is not None else Usage()
