"""One run of the agent loop: check limits, call the model, run the tools, repeat.

The run's state lives in its transcript; each step is a short method. Limits are checked before
every model call; tool results are appended before any stop is raised, so the transcript is
valid (every call answered) whatever ends the run. A run takes two things: its config (a
snapshot of its agent's settings) and where it starts (a prompt, or a point a run stopped at).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from steadyloop import texts
from steadyloop.approvals import Approvals, Pause
from steadyloop.context import RunContext, make_instructions
from steadyloop.cost import priced
from steadyloop.errors import (
    ContextLimitExceeded,
    ContextWindowExceeded,
    FatalToolError,
    LimitExceeded,
    RepeatLimitExceeded,
)
from steadyloop.events import (
    Compacted,
    Event,
    InstructionsMade,
    LimitReached,
    MessageAdded,
    ModelRequestStarted,
    RunFinished,
    RunStarted,
)
from steadyloop.limits import (
    CallBudget,
    Stop,
    reached_before_call,
    reached_context,
    reached_cost,
)
from steadyloop.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage, UserMessage
from steadyloop.modelcall import call_model, require_prices
from steadyloop.offer import Offer
from steadyloop.output import FINAL_ANSWER, check_text, nudge_after
from steadyloop.repeats import RepeatGuard
from steadyloop.result import RunResult
from steadyloop.transcript import Transcript
from steadyloop.unanswered import not_run, resumed_answers, to_run_now
from steadyloop.usage import Tally

if TYPE_CHECKING:
    from steadyloop.config import RunConfig
    from steadyloop.costshare import CostShare
    from steadyloop.dispatch import Dispatcher, TurnResults
    from steadyloop.output import FinalAnswer
    from steadyloop.start import RunStart
    from steadyloop.toolchanges import ToolWatch
    from steadyloop.tracing.spans import Tracing

__all__ = ["Outcome", "Run"]

_UNCHECKED: Any = object()  # a text run without `output_check`: its output is the last text

Outcome = Literal["continue", "answered", "paused"]
"""What a step that can end the run says: go on, the run has its answer, or it waits for
decisions on gated calls."""


class Run:
    """The state and steps of one run."""

    def __init__(
        self,
        config: RunConfig,
        dispatcher: Dispatcher,
        start: RunStart,
        *,
        notify: Callable[[Event], None] | None = None,
        commit: Callable[[], Awaitable[None]] | None = None,
        tracing: Tracing | None = None,
        streaming: bool = False,
        answer: FinalAnswer | None = None,
        deps: Any = None,
        watch: ToolWatch | None = None,
        share: CostShare | None = None,
    ) -> None:
        """`notify` is told each event; `commit` makes what was recorded so far durable (the
        run log's write-ahead points). `tracing`: the run's spans, when it is traced (the
        dispatcher has them too). `answer` is the `final_answer` tool of a run with a typed
        answer (one of the dispatcher's tools); `deps` what the run's `RunContext` carries;
        `watch` the toolsets whose tools may change while the run goes on; `share` the cost
        budget a sub-agent's run spends with its siblings (`steadyloop.costshare`)."""
        self.config = config
        self.deps = deps
        self.decisions = start.decisions_for(dispatcher.tools)
        self.approvals: Approvals | None = None
        if self.decisions or any(tool.approve for tool in dispatcher.tools):
            self.approvals = Approvals(
                config.approver, self.decisions, self.context, notify, commit
            )
            dispatcher = dispatcher.around([self.approvals])
        self.dispatcher = dispatcher
        self.prompt = start.prompt
        self.tracing = tracing
        self.effects = config.effects if tracing is None else tracing.around(config.effects)
        self.notify = notify
        self.streaming = streaming
        self.run_id = start.run_id
        self.commit = commit
        self.transcript = Transcript(start.messages, config.estimate_tokens)
        self.history_length = len(self.transcript)
        self.turns = start.turns_used
        self.recovered = start.recovered
        self.spent = Tally(start.usage)
        self.spent_by_model = {model: Tally(u) for model, u in start.usage_by_model.items()}
        self.guard = RepeatGuard(config.limits.max_repeats, config.limits.max_same_results)
        text = config.instructions if not callable(config.instructions) else None
        self.offer = Offer.make(config, text, dispatcher.tools)
        self.stop_reason = "end_turn"
        self.answer = answer
        # A text answer's output once `output_check` accepted it; None until then.
        self.checked: Any = _UNCHECKED if config.output_check is None else None
        self.pause: Pause | None = None
        self.watch = watch
        self.share = share
        self.budget = CallBudget.for_run(
            {tool.name: tool.max_calls for tool in dispatcher.tools}, config.limits, FINAL_ANSWER
        )
        # Calls of a resumed run's own replies that its call limits refused, by call id.
        self.refused = (
            {} if self.budget is None else self.budget.replay(self.transcript.entries, self.turns)
        )

    async def execute(self) -> RunResult[Any]:
        """Runs to an answer; a limit raises `LimitExceeded` with the partial result."""
        await self._begin()
        if await self._answer_unanswered_calls() == "paused":
            return self._finish()
        if await self._answer_recovered():
            return self._finish()  # resumed after its answer was accepted: no model call
        if self.prompt is not None:
            self._append(self.prompt)
        if callable(self.config.instructions):
            await self._make_instructions()
        while True:
            if self.watch is not None and self.watch.stale():
                await self._refresh_tools()
            await self._check_limits()
            if self.commit is not None:
                await self.commit()  # every result is logged before the model reads it
            reply = await self._call_model()
            self._append(reply)
            if not reply.tool_calls:
                if await self._take_answer(reply) == "answered":
                    return self._finish()
                continue
            if self.commit is not None:
                await self.commit()  # the reply is logged before any of its calls starts
            if await self._run_tools(reply) != "continue":
                return self._finish()

    @property
    def usage(self) -> Usage:
        """What the run has used so far."""
        return self.spent.total()

    def result(self) -> RunResult[Any]:
        """What the run has produced so far."""
        entries = self.transcript.entries
        last = next((m for m in reversed(entries) if isinstance(m, AssistantMessage)), None)
        text = last.text if last is not None else ""
        output = self.answer.value if self.answer is not None else self.checked
        return RunResult(
            output=text if output is _UNCHECKED else output,
            messages=entries,
            stop_reason=self.stop_reason,
            usage=self.usage,
            run_id=self.run_id,
            text=text,
            usage_by_model={model: spent.total() for model, spent in self.spent_by_model.items()},
            pending=self.pause.pending if self.pause is not None else (),
            _pause=self.pause,
        )

    # -- steps -------------------------------------------------------------------------------

    async def _begin(self) -> None:
        """Refuses a cost limit it cannot keep, then announces the run."""
        config = self.config
        if config.limits.max_cost_usd is not None:
            await require_prices(config.model)
        prompt = self.prompt.text if self.prompt is not None else ""
        self._emit(RunStarted(self.run_id, config.model.name, prompt, self.history_length))

    async def _answer_recovered(self) -> bool:
        """True when a resumed run's typed answer was accepted before it stopped."""
        if self.answer is None or self.recovered is None:
            return False
        return await self.answer.recover(self.transcript.entries)

    async def _make_instructions(self) -> None:
        """Callable instructions make this run's system prompt, once; the text is logged."""
        text = await make_instructions(self.config.instructions, self.context())
        self.offer = Offer.make(self.config, text, self.dispatcher.tools)
        self._emit(InstructionsMade(text or ""))

    async def _take_answer(self, reply: AssistantMessage) -> Outcome:
        """A reply without calls: "answered", or "continue" once the message saying why it is
        not an answer (or why `output_check` refused it) is appended."""
        nudge = nudge_after(reply, self.answer)
        if nudge is None:
            nudge = await self._check_text(reply)
        if nudge is not None:
            self._append(nudge)
            return "continue"
        if reply.stop_reason == "max_tokens":
            self.stop_reason = "max_tokens"
        return "answered"

    async def _check_text(self, reply: AssistantMessage) -> UserMessage | None:
        """Runs the agent's `output_check` on a text answer; the refusal to append, if any."""
        check = self.config.output_check
        if check is None or self.answer is not None:
            return None
        try:
            self.checked, refusal = await check_text(check, reply.text)
        except FatalToolError as exc:
            self._raise_stop(exc)
        return refusal

    async def _refresh_tools(self) -> None:
        """Offers the tools the toolsets have now, from the next model request on; the
        transcript is left as it is (the request's tools say what the model may call)."""
        assert self.watch is not None
        tools, changes = await self.watch.refresh({t.name: t for t in self.dispatcher.tools})
        if not changes:
            return
        self.dispatcher = self.dispatcher.with_tools(tools)
        self.offer = Offer.make(self.config, self.offer.instructions, self.dispatcher.tools)
        for change in changes:
            self._emit(change)

    async def _check_limits(self) -> None:
        limits = self.config.limits
        self._stop_at(reached_before_call(limits, self.turns, self.budget, self.spent.cost_usd))
        if self.share is not None:
            self._stop_at(self.share.reached())
        tokens = self.transcript.context_tokens(self.offer.fixed_tokens)
        compaction = self.config.compaction
        if compaction is not None and compaction.due(tokens, limits.max_context_tokens):
            await self._compact()
            self._check_cost()  # the summary was a paid call too
            tokens = self.transcript.context_tokens(self.offer.fixed_tokens)
        self._stop_at(reached_context(limits, tokens))

    def _check_cost(self) -> None:
        self._stop_at(reached_cost(self.config.limits, self.spent.cost_usd))
        if self.share is not None:
            self._stop_at(self.share.reached())

    async def _call_model(self) -> AssistantMessage:
        self.turns += 1
        compacted = False
        while True:
            try:
                reply = await self._request_with_retries()
                break
            except ContextWindowExceeded as exc:
                if self.config.compaction is None or compacted or not await self._compact():
                    self._stop(ContextLimitExceeded, f"the provider says: {exc}", cause=exc)
                compacted = True
                self._check_cost()
        self._spent(reply)
        return self.transcript.with_unique_call_ids(reply)

    def _spent(self, reply: AssistantMessage) -> None:
        """Adds what the request that got `reply` used to the run's usage, in all and under
        the model that answered."""
        usage = reply.request_usage()
        self.spent.add(usage)
        if self.share is not None:
            self.share.charge(usage.cost_usd)
        model = reply.model or self.config.model.name
        by_model = self.spent_by_model.get(model)
        if by_model is None:
            self.spent_by_model[model] = Tally(usage)
        else:
            by_model.add(usage)

    def _request_with_retries(self) -> Awaitable[AssistantMessage]:
        """Asks the model for the turn's reply (see `steadyloop.modelcall`)."""
        request = self.offer.request(self.config, self.transcript.view())
        if self.notify is not None:  # made only for a listener (the spans do not read it)
            self._emit(
                ModelRequestStarted(
                    self.turns,
                    self.transcript.context_tokens(self.offer.fixed_tokens),
                    self.config.limits.max_context_tokens,
                    len(request.messages),
                )
            )
        return call_model(
            self.config, request, self.effects, run_id=self.run_id, turn=self.turns,
            streaming=self.streaming, emit=self._emit,
        )  # fmt: skip

    async def _run_tools(self, reply: AssistantMessage) -> Outcome:
        """Answers the reply's calls: "answered" when a typed answer was accepted, "paused"
        when some wait for a decision, else "continue"."""
        if reply.stop_reason == "max_tokens":
            for call in reply.tool_calls:
                text = texts.CUT_OFF.format(name=call.name)
                self._append(ToolResult(call.id, call.name, text, is_error=True))
            return "continue"
        self.spent.add_calls(len(reply.tool_calls))
        if self.answer is not None:
            self.answer.expect(reply.tool_calls)
        refused = None
        if self.budget is not None:
            refused = {c.id: t for c in reply.tool_calls if (t := self.budget.refusal(c))}
        batch = await self._dispatch(reply.tool_calls, refused)
        if self._pause_for_decisions(batch) == "paused":
            return "paused"
        checked = self.guard.check_turn(batch.outcomes)
        for result in checked.results:
            self._append(result)
        if batch.stop is not None:
            self._raise_stop(batch.stop)
        if checked.stop is not None:
            self._stop(RepeatLimitExceeded, checked.stop)
        accepted = self.answer is not None and self.answer.accepted
        return "answered" if accepted else "continue"

    def _pause_for_decisions(
        self, batch: TurnResults, answers: Mapping[str, ToolResult] | None = None
    ) -> Outcome:
        """ "paused" when some of the turn's calls wait for a decision, else "continue". The
        turn's answers, in call order, end the paused transcript: what ran, and each waiting
        call answered as waiting, so a run continued from these messages knows what was done.
        `resume` goes on from the reply instead: it answers the calls again, the ones that ran
        with their held results and the decided ones as decided. `answers`: the turn's
        results (in call order), when not just the batch's."""
        if self.approvals is None or not self.approvals.pending or batch.stop is not None:
            return "continue"  # no call of the turn waits for a decision
        if answers is None:
            answers = {outcome.call.id: outcome.result for outcome in batch.outcomes}
        self.pause = self.approvals.pause(answers, self.turns)
        if self.pause is None:
            return "continue"
        self.stop_reason = "approval"
        for result in answers.values():
            self._append(result)
        return "paused"

    async def _compact(self) -> bool:
        """Appends a summary of the older messages; False when nothing could be summarised."""
        config, before = self.config, self.transcript.context_tokens(self.offer.fixed_tokens)
        assert config.compaction is not None
        max_chars = config.limits.max_context_tokens * 2
        made = await config.compaction.summarise_older(self.transcript, config.model, max_chars)
        if made is None:
            return False
        summary, reply = made
        if reply is not None:
            self._spent(await priced(reply, config.model))
        self._append(summary)
        after = self.transcript.context_tokens(self.offer.fixed_tokens)
        self._emit(Compacted(summary, before, after))
        return True

    async def _answer_unanswered_calls(self) -> Outcome:
        """Answers the calls of the last reply that have no result (`steadyloop.unanswered`);
        "paused" when some of them still wait for a decision, else "continue"."""
        calls = self.transcript.open_calls()
        if self.recovered is None or not calls:
            for result in not_run(calls):
                self._append(result)
            return "continue"
        settled = {*self.refused, *self.decisions}
        rerun = to_run_now(calls, self.recovered, self.dispatcher.tools, settled)
        batch = await self._dispatch(rerun, self.refused)
        fresh = {outcome.call.id: outcome.result for outcome in batch.outcomes}
        answers = resumed_answers(calls, self.recovered, fresh)
        if self._pause_for_decisions(batch, answers) == "paused":
            return "paused"
        for result in answers.values():
            self._append(result)
        if batch.stop is not None:
            self._raise_stop(batch.stop)
        return "continue"

    # -- bookkeeping -------------------------------------------------------------------------

    def context(self, call_id: str | None = None, turn: int | None = None) -> RunContext[Any]:
        """The run as a tool call (or an approver, or instructions) sees it now."""
        turn = self.turns if turn is None else turn
        usage, messages = self.usage, self.transcript.entries
        return RunContext(self.deps, self.run_id, turn, call_id, usage, messages)

    async def _dispatch(
        self, calls: Sequence[ToolCall], refused: Mapping[str, str] | None = None
    ) -> TurnResults:
        """Answers `calls` (concurrently), each with its context, those `refused` (by call id)
        with their refusal; what the calls spent on models (sub-agents) is added to the run's
        usage as they are answered."""
        batch = await self.dispatcher.run(
            calls, self.notify, run_id=self.run_id, turn=self.turns,
            context_for=self._call_context, refused=refused,
        )  # fmt: skip
        for outcome in batch.outcomes:
            if outcome.usage is not None:
                self.spent.add(outcome.usage)
        return batch

    def _call_context(self, call: ToolCall) -> RunContext[Any]:
        """The context of a call of the turn being answered."""
        return self.context(call.id)

    def _append(self, message: Message) -> None:
        self.transcript.append(message)
        if self.notify is not None:
            self.notify(MessageAdded(len(self.transcript) - 1, message))

    def _emit(self, event: Event) -> None:
        if self.notify is not None:
            self.notify(event)
        if self.tracing is not None:  # retries, compactions and stops are span events
            self.tracing.observe(event)

    def _finish(self) -> RunResult[Any]:
        result = self.result()
        self._emit(RunFinished(result))
        return result

    def _raise_stop(self, stop: BaseException) -> NoReturn:
        """Raises what stopped a turn's calls; a `FatalToolError` carries the partial result,
        whose `stop_reason` is "error"."""
        if isinstance(stop, FatalToolError):
            self.stop_reason = "error"
            stop.result = self.result()
        raise stop

    def _stop_at(self, stop: Stop | None) -> None:
        """Stops the run at the limit it reached, if any."""
        if stop is not None:
            self._stop(*stop)

    def _stop(
        self, error: type[LimitExceeded], message: str, cause: BaseException | None = None
    ) -> NoReturn:
        self.stop_reason = error.reason
        self._emit(LimitReached(error.reason, message))
        raise error(message, self._finish()) from cause
