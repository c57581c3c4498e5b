"""Human approval of risky tool calls: decisions, waiting calls, and the hook that applies them.

A tool made with `@tool(approve=True)` (or `approve=fn(arguments) -> bool`) is gated. Each gated
call is decided after its arguments are validated and before its body runs, so nothing ever runs
twice: `Approve()` runs it, `Deny(reason)` answers it with an error the model reads, `Edit(args)`
runs it with other arguments (validated again; the result says so), and `Defer()` leaves it
waiting. The decision comes from `Agent(approver=fn)`, or from `Agent.resume(...,
decisions=...)` for a run that paused (`stop_reason="approval"`, `result.pending`). The hook
(`Approvals`, an `Effects`) is added to a run only when a tool is gated or decisions are given.
With a run log, a decision to run a call is committed before the call starts, so a process
killed after the call's effect never has it waiting for (and run on) a second approval.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from steadyloop import texts
from steadyloop.approver_thread import ApproverThread
from steadyloop.effects import Effects, Proceed, ToolInvocation
from steadyloop.errors import ConfigError
from steadyloop.events import CallDecided, Event, ToolCallFinished
from steadyloop.frozen import slot_setters
from steadyloop.messages import ToolCall, ToolResult, canonical_arguments

if TYPE_CHECKING:
    from steadyloop.context import RunContext

__all__ = [
    "DENIED_TEXT",
    "WAITING_TEXT",
    "Approvals",
    "Approve",
    "Approver",
    "AwaitingApproval",
    "Decision",
    "Decisions",
    "Defer",
    "Deny",
    "Edit",
    "Pause",
    "PendingCall",
    "check_decisions",
    "denied_result",
    "logged_decision",
]

DENIED_TEXT = texts.DENIED
WAITING_TEXT = texts.WAITING


# No fields: `init=False` leaves `object.__init__`, so an approver makes one without running a
# generated `__init__` that does nothing.
@dataclass(frozen=True, slots=True, init=False)
class Approve:
    """Run the call as the model made it."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run the call; the model reads "denied by the reviewer: `reason`"."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class Edit:
    """Run the call with these arguments instead (validated again); its result says so."""

    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True, init=False)
class Defer:
    """Decide later: the run pauses once the turn's other calls are answered."""


Decision: TypeAlias = Approve | Deny | Edit | Defer
_DECISIONS = (Approve, Deny, Edit, Defer)  # tuples: `isinstance` reads them faster than unions
_RUNS = (Approve, Edit)


@dataclass(frozen=True, slots=True)
class AwaitingApproval(ToolCallFinished):
    """The answer a deferred call holds while its run pauses: the call did not run and nothing
    failed (its error text is what the model reads only if the run stops instead)."""


@dataclass(frozen=True, slots=True, init=False)
class PendingCall:
    """A gated call waiting for a decision: `arguments` is the JSON object the model sent,
    `run_id` the run it belongs to (None for a run without a log).

    Hashable, so it can key `decisions`; as a key it binds the decision to this run and these
    exact arguments, not just the call id (providers that send no ids get `call_0`, `call_1`...
    in every run).
    """

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    run_id: str | None = None

    def __init__(
        self, call_id: str, name: str, arguments: Mapping[str, Any], run_id: str | None = None
    ) -> None:
        # One is made for every call asked about: its slots are set directly (see
        # `steadyloop.frozen`).
        set_call_id, set_name, set_arguments, set_run_id = _PENDING_SLOTS
        set_call_id(self, call_id)
        set_name(self, name)
        set_arguments(self, arguments)
        set_run_id(self, run_id)

    def __hash__(self) -> int:
        return hash((self.call_id, self.name, canonical_arguments(self.arguments), self.run_id))


_PENDING_SLOTS = slot_setters(PendingCall)


Approver = Callable[[PendingCall, "RunContext[Any]"], Decision | Awaitable[Decision]]
# Keyed by call id (str) or by `PendingCall`, either way or mixed (checked when used; `Any`
# because a mapping's key type is invariant, so no one annotation accepts all three).
Decisions = Mapping[Any, Decision]


@dataclass(slots=True)
class Pause:
    """What a run paused for approval leaves for `resume`: the waiting calls, the results of
    the turn's other calls (held back so that results enter the transcript in call order), the
    model calls spent, and whether it was resumed already."""

    pending: tuple[PendingCall, ...]
    held: dict[str, ToolResult]
    turns: int
    resumed: bool = field(default=False)


class Approvals(Effects):
    """The approval hook of one run.

    `decided` holds decisions already made (by call id) for calls this run will answer;
    others are asked of `approver`, one question at a time, in call order: an async approver on
    the loop, a sync one in a worker thread, a turn's questions in one visit
    (`steadyloop.approver_thread`). Deferred calls collect in `pending`.
    `commit` (the run log's write-ahead point, when the run has one) makes a decision to run a
    call durable before the call starts: a process killed after the call's effect then finds
    the call approved and unfinished (answered "interrupted", or run again if idempotent),
    never waiting for a second approval that would run it twice.
    """

    def __init__(
        self,
        approver: Approver | None,
        decided: Mapping[str, Decision],
        context: Callable[[str], RunContext[Any]],
        notify: Callable[[Event], None] | None,
        commit: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._async = approver if inspect.iscoroutinefunction(approver) else None
        self._decided = dict(decided)
        self._context = context
        self._notify = notify
        self._commit = commit
        self._asking = _OneAtATime()  # an async approver's questions
        # A sync approver's questions, asked in a worker thread a turn at a time.
        self._threaded = (
            ApproverThread(approver, _DECISIONS)
            if approver is not None and self._async is None
            else None
        )
        self.pending: list[PendingCall] = []

    def pause(self, answers: Mapping[str, ToolResult], turns: int) -> Pause | None:
        """The pause of a run whose turn left calls waiting for a decision, else None.
        `answers`: the turn's results by call id; those of the calls that ran are held."""
        if not self.pending:
            return None
        waiting = {call.call_id for call in self.pending}
        held = {call_id: r for call_id, r in answers.items() if call_id not in waiting}
        return Pause(tuple(self.pending), held, turns)

    async def tool_call(self, call: ToolInvocation, proceed: Proceed) -> ToolCallFinished:
        tool, model_call = call.tool, call.call
        decision = self._decided.pop(model_call.id, None)
        if tool is None or call.arguments is None or (decision is None and not tool.approve):
            return await proceed()  # ungated, or a call that cannot run: the dispatcher answers
        arguments = dict(call.arguments)
        if decision is None:
            if not tool.needs_approval(arguments):
                return await proceed()
            pending = PendingCall(model_call.id, tool.name, arguments, call.run_id)
            if self._async is not None:  # asked right here, on the loop, one at a time
                asking = self._asking
                if (turn := asking.take()) is not None:
                    await turn
                try:
                    answer = await self._async(pending, self._context(model_call.id))
                finally:
                    asking.next()
            else:
                answer = await self._ask(pending)
            if not isinstance(answer, _DECISIONS):
                raise _not_a_decision(answer, pending)
            decision = answer
        if self._notify is not None:
            self._notify(_decided(model_call, decision, arguments))
        if self._commit is not None and isinstance(decision, _RUNS):
            await self._commit()  # the decision is in the log before the call can take effect
        if isinstance(decision, Approve):
            return await proceed()
        if isinstance(decision, Edit):
            return await proceed(decision.arguments)
        if isinstance(decision, Deny):
            finished = _finished(model_call, denied_result(model_call, decision.reason))
            self._emit(finished)  # logged as the call's answer, like a call that ran
            return finished
        self.pending.append(PendingCall(model_call.id, tool.name, arguments, call.run_id))
        waiting = ToolResult(model_call.id, model_call.name, WAITING_TEXT, is_error=True)
        return AwaitingApproval(model_call, waiting, waiting.content, 0.0, 0)

    async def _ask(self, pending: PendingCall) -> object:
        """A sync approver's answer, from its worker thread's next visit; `Defer()` when the
        run has no approver."""
        if self._threaded is None:
            return Defer()
        return await self._threaded.ask(pending, self._context(pending.call_id))

    def _emit(self, event: Event) -> None:
        if self._notify is not None:
            self._notify(event)


class _OneAtATime:
    """An async approver's questions, one at a time, in the order they come: a question waits
    only while another is open, and the next one waiting is handed the turn as that one ends
    (a waiting question cancelled passes it on). What `asyncio.Lock` does, without the
    coroutine its `acquire` makes and the look over its waiters on every question: an approver
    that answers at once never makes one wait."""

    __slots__ = ("_waiting", "open")

    def __init__(self) -> None:
        self.open = False  # a question has the turn
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    def take(self) -> Coroutine[Any, Any, None] | None:
        """The turn for a new question: None when it has it at once (none was open), else
        what to await for it. Whoever has the turn gives it up with `next()`."""
        if not self.open:
            self.open = True
            return None
        return self._wait()

    async def _wait(self) -> None:
        """Returns once the turn is handed to this question (`open` stays True)."""
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # handed the turn as it was cancelled
                self.next()
            raise

    def next(self) -> None:
        """The open question ended: the turn goes to the next one waiting, if any."""
        waiting = self._waiting
        while waiting:
            turn = waiting.popleft()
            if not turn.done():  # not cancelled meanwhile
                turn.set_result(None)
                return
        self.open = False


def denied_result(call: ToolCall, reason: str) -> ToolResult:
    """What the model reads for a denied call."""
    text = f"{DENIED_TEXT}: {reason}" if reason else DENIED_TEXT
    return ToolResult(call.id, call.name, text, is_error=True)


def logged_decision(data: Mapping[str, Any]) -> Decision:
    """A `decision` event's data read back as the decision it logged."""
    kind = data["decision"]
    if kind == "approved":
        return Approve()
    if kind == "edited":
        return Edit(data["edited"])
    if kind == "denied":
        return Deny(data.get("reason", ""))
    return Defer()


def check_decisions(pending: Sequence[PendingCall], decisions: Decisions) -> dict[str, Decision]:
    """The decisions by call id; `ConfigError` (nothing runs) for a decision that names no
    waiting call, was made for another run's call or for other arguments, is not one to run
    on, or is missing. A `PendingCall` key made by hand (no `run_id`) binds only to the call id
    and arguments."""
    waiting = {call.call_id: call for call in pending}
    names = ", ".join(waiting) or "none"
    out: dict[str, Decision] = {}
    for key, decision in decisions.items():
        call_id = key.call_id if isinstance(key, PendingCall) else key
        call = waiting.get(call_id)
        if call is None:
            raise ConfigError(
                f"no call {call_id!r} is waiting for a decision in this run (waiting: {names}): "
                "decide the calls in result.pending"
            )
        if isinstance(key, PendingCall) and key.run_id not in (None, call.run_id):
            raise ConfigError(
                f"the decision for call {call_id!r} was made for a call of run {key.run_id}, "
                f"not of run {call.run_id}: decide the calls in this run's result.pending"
            )
        if isinstance(key, PendingCall) and not _same_call(key, call):
            raise ConfigError(
                f"the decision for call {call_id!r} was made for {key.name}"
                f"({json.dumps(dict(key.arguments))}), but the call waiting is {call.name}"
                f"({json.dumps(dict(call.arguments))}): decide the calls in this run's "
                "result.pending"
            )
        if not isinstance(decision, Approve | Deny | Edit):
            raise ConfigError(
                f"the decision for call {call_id!r} is {decision!r}: resume with Approve(), "
                "Deny(reason) or Edit(arguments), or leave the run paused"
            )
        out[call_id] = decision
    missing = [call_id for call_id in waiting if call_id not in out]
    if missing:
        raise ConfigError(
            f"no decision for the waiting call(s) {', '.join(missing)}: give each one in "
            "decisions={call_id: Approve() | Deny(reason) | Edit(arguments)}"
        )
    return out


def _same_call(key: PendingCall, call: PendingCall) -> bool:
    """The same tool with the same arguments (whichever run the key names)."""
    return key.name == call.name and dict(key.arguments) == dict(call.arguments)


def _not_a_decision(answer: object, pending: PendingCall) -> ConfigError:
    """What an approver that returned `answer` (no decision) should have returned."""
    return ConfigError(
        f"the approver returned {answer!r} for call {pending.call_id}: return "
        "Approve(), Deny(reason), Edit(arguments) or Defer()"
    )


def _decided(call: ToolCall, decision: Decision, arguments: Mapping[str, Any]) -> CallDecided:
    if isinstance(decision, Approve):
        return CallDecided(call, "approved", arguments)
    if isinstance(decision, Deny):
        return CallDecided(call, "denied", arguments, reason=decision.reason)
    if isinstance(decision, Edit):
        return CallDecided(call, "edited", arguments, edited=dict(decision.arguments))
    return CallDecided(call, "deferred", arguments)


def _finished(call: ToolCall, result: ToolResult) -> ToolCallFinished:
    return ToolCallFinished(call, result, result.content, 0.0, 0)
