"""Durable runs on DBOS (extra `steadyloop[dbos]`): `durable(agent)`.

DBOS checkpoints a workflow's steps in Postgres and, when the process running it dies, runs the
workflow again elsewhere from the top, answering each step that had finished with its recorded
output. `durable(agent)` makes each model call and each tool call a step (through the effects
seam, so every kind of tool counts), and the agent's run, called inside a workflow, the loop of
that workflow: its run id is the workflow id.

    agent = durable(Agent("openai:gpt-4.1-mini", tools=[...], store="postgresql://..."))

    @DBOS.workflow()
    async def answer(ticket: str) -> str:
        return (await agent.run(ticket)).output   # run id: DBOS.workflow_id

A recovered workflow replays the loop rather than resuming it from the run log: only the step
that was in flight runs again. Replaying logs every event of the run a second time at the
sequence number it had, which the log ignores (its appends are idempotent), so the recovered
run's log is the one a clean run would have left.

The same holds for a run a workflow goes on with (`agent.resume(run_id, decisions=...)`, or
`agent.run(..., run_id=DBOS.workflow_id, if_exists="resume")`): the reads that decide what the
run does (`find`, `run`, `events`) are DBOS steps, so a recovered workflow sees the run as its
first attempt saw it (paused, say, not the "running" its first attempt left) and replays from
there. The events read are recorded by their numbers: the log keeps every event it holds.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from dbos import DBOS

from steadyloop.effects import Effects, ModelCall, ToolInvocation
from steadyloop.errors import ConfigError
from steadyloop.events import Event, TextDelta, ToolCallDelta
from steadyloop.messages import AssistantMessage, Message, Usage
from steadyloop.store import LoggedEvent, RunInfo, RunLinks, RunLog, ToolRecord

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.events import ToolCallFinished

__all__ = ["DurableSteps", "WorkflowLog", "durable"]

T = TypeVar("T")

# The events a step's own code emits (a model call's retries, a tool call's decision and end),
# collected while the step runs: they are part of its recorded output.
_STEP_EVENTS: contextvars.ContextVar[list[Event] | None] = contextvars.ContextVar(
    "steadyloop_dbos_step_events", default=None
)


def durable(agent: Agent) -> Agent:
    """Makes `agent`'s model and tool calls DBOS steps and its runs replayable; returns it.

    The agent needs a run log every worker shares (Postgres, like DBOS itself). Run it inside a
    `@DBOS.workflow()`; outside one it runs as usual.
    """
    store = agent.store
    if store is None:
        raise ConfigError(
            "durable() needs an agent with a run log that every worker shares: "
            "Agent(..., store='postgresql://...')"
        )
    if isinstance(store, WorkflowLog):
        return agent  # durable already
    log = WorkflowLog(store)
    agent.store = log
    agent.effects = [DurableSteps(log), *filter(None, [agent.effects])]
    return agent


class DurableSteps(Effects):
    """Runs each model call as the step "model" and each tool call as "tool:NAME" when inside
    a DBOS workflow (outermost, so that other effects run only when the call really does).

    What a call logs from inside it (a model call's retries; a tool call's decision and end)
    is recorded with the step's output: a call that DBOS answers from its record does not run,
    so `log` logs those events instead, at their places.
    """

    def __init__(self, log: WorkflowLog) -> None:
        self._log = log

    async def model_call(
        self, call: ModelCall, proceed: Callable[[], Awaitable[AssistantMessage]]
    ) -> AssistantMessage:
        return await self._step("model", call.run_id, proceed)

    async def tool_call(
        self, call: ToolInvocation, proceed: Callable[[], Awaitable[ToolCallFinished]]
    ) -> ToolCallFinished:
        return await self._step(f"tool:{call.call.name}", call.run_id, proceed)

    async def _step(self, name: str, run_id: str | None, proceed: Callable[[], Awaitable[T]]) -> T:
        """`proceed()` as the DBOS step `name` inside a workflow (as is outside one)."""
        if DBOS.workflow_id is None:
            return await proceed()
        ran = False

        async def body() -> tuple[T, list[Event]]:
            nonlocal ran
            ran = True
            events: list[Event] = []
            collecting = _STEP_EVENTS.set(events)
            try:
                return await proceed(), events
            finally:
                _STEP_EVENTS.reset(collecting)

        output, events = await DBOS.run_step_async({"name": name}, body)
        if not ran and run_id is not None:
            self._log.replayed(run_id, events)
        return output


def _recorded(name: str, read: Callable[[], T]) -> T:
    """`read()` as the DBOS step `name` inside a workflow: a recovered workflow gets what its
    first attempt read, so it takes the same path. DBOS runs such a step only off the event
    loop, so one called on it runs in a thread of its own (a quick read; the loop waits)."""
    if DBOS.workflow_id is None:
        return read()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return DBOS.run_step({"name": name}, read)

    def step() -> T:
        return DBOS.run_step({"name": name}, read)

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(contextvars.copy_context().run, step).result()


class WorkflowLog:
    """A run log seen from DBOS workflows: a run started in a workflow is named after it, and
    starting a run that is already logged under the running workflow's id replays it.

    Replaying a run claims it and logs its events again from the top (each a no-op where it is
    already logged); the events of calls DBOS answers from its record come from that record
    (`replayed`), so every later event keeps its place.

    In a workflow, `find`, `run` and `events` are DBOS steps, and a run resumed there logs on
    from the events the workflow's first attempt read: a recovered `resume` (or
    `if_exists="resume"`) replays from where that attempt started. Everything else is the
    wrapped log's.
    """

    def __init__(self, log: RunLog) -> None:
        self.log = log
        self.location = log.location
        self.read_only = log.read_only
        self.blocking_io = log.blocking_io
        self._recorders: dict[str, Callable[[Event], None]] = {}

    def start_run(
        self,
        *,
        model: str,
        prompt: str,
        history: Sequence[Message],
        config: Mapping[str, Any],
        run_id: str | None = None,
        links: RunLinks | None = None,
    ) -> str:
        workflow = DBOS.workflow_id
        run_id = run_id if run_id is not None else workflow
        if run_id is not None and run_id == workflow and self.log.find(run_id) is not None:
            self.log.claim(run_id)
            self.log.mark(run_id, "running")
            return run_id
        return self.log.start_run(
            model=model, prompt=prompt, history=history, config=config, run_id=run_id, links=links
        )

    def recorder(
        self, run_id: str, next_seq: int | None = None, seen: Sequence[LoggedEvent] | None = None
    ) -> Callable[[Event], None]:
        if next_seq is None and seen is None:
            seen = self.events(run_id)  # in a workflow, as its first attempt read them
        record = self.log.recorder(run_id, next_seq, seen)

        def recorded(event: Event) -> None:
            record(event)
            collected = _STEP_EVENTS.get()
            if collected is not None and not isinstance(event, TextDelta | ToolCallDelta):
                collected.append(event)

        if DBOS.workflow_id is not None:
            self._recorders[run_id] = recorded
        return recorded

    def replayed(self, run_id: str, events: Iterable[Event]) -> None:
        """Logs the events a call of run `run_id` logged from inside it, when DBOS answered
        the call from its record instead of running it."""
        record = self._recorders.get(run_id)
        if record is not None:
            for event in events:
                record(event)

    async def commit(self, run_id: str) -> None:
        await self.log.commit(run_id)

    def flush(self) -> None:
        self.log.flush()

    def mark(
        self, run_id: str, status: str, error: str | None = None, usage: Usage | None = None
    ) -> None:
        self.log.mark(run_id, status, error, usage)

    def claim(self, run_id: str) -> None:
        self.log.claim(run_id)

    def release(self, run_id: str) -> None:
        self._recorders.pop(run_id, None)
        self.log.release(run_id)

    def runs(self, limit: int = 20) -> list[RunInfo]:
        return self.log.runs(limit)

    def run(self, run_id: str) -> RunInfo:
        return _recorded("steadyloop:run", lambda: self.log.run(run_id))

    def find(self, run_id: str) -> RunInfo | None:
        return _recorded("steadyloop:find", lambda: self.log.find(run_id))

    def session(self, name: str) -> list[RunInfo]:
        return _recorded("steadyloop:session", lambda: self.log.session(name))

    def latest(self, session: str) -> RunInfo | None:
        return _recorded("steadyloop:latest", lambda: self.log.latest(session))

    def children(self, run_id: str) -> list[RunInfo]:
        return self.log.children(run_id)

    def runs_with_prefix(self, prefix: str, limit: int = 2) -> list[RunInfo]:
        return self.log.runs_with_prefix(prefix, limit)

    def events(self, run_id: str) -> list[LoggedEvent]:
        """The run's events; in a workflow, those its first attempt read (by their numbers),
        not those an earlier attempt logged since."""
        events = self.log.events(run_id)
        seqs = set(_recorded("steadyloop:events", lambda: [event.seq for event in events]))
        return [event for event in events if event.seq in seqs]

    def messages(self, run_id: str) -> tuple[Message, ...]:
        return self.log.messages(run_id)

    def tool_records(self, run_id: str) -> dict[str, ToolRecord]:
        return self.log.tool_records(run_id)

    def to_jsonl(self, run_id: str) -> Iterator[str]:
        return self.log.to_jsonl(run_id)

    def from_jsonl(self, lines: Iterable[str]) -> str:
        return self.log.from_jsonl(lines)

    def close(self) -> None:
        self.log.close()
