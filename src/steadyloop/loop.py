"""One run of the agent loop: check limits, call the model, run the tools, repeat.

The run's state lives in its transcript; each step is a short method. Limits are checked before
every model call; tool results are appended before any stop is raised, so the transcript is
valid (every call answered) whatever ends the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from steadyloop.approvals import Approvals, Decision, Pause
from steadyloop.context import RunContext, ToolContext, make_instructions
from steadyloop.cost import has_price, priced
from steadyloop.effects import Effects, ModelCall, ToolInvocation
from steadyloop.errors import (
    ConfigError,
    ContextLimitExceeded,
    ContextWindowExceeded,
    CostLimitExceeded,
    FatalToolError,
    LimitExceeded,
    ModelError,
    RepeatLimitExceeded,
    TurnLimitExceeded,
)
from steadyloop.events import (
    Compacted,
    Event,
    InstructionsMade,
    LimitReached,
    MessageAdded,
    ModelRequestStarted,
    ModelRetry,
    RunFinished,
    RunStarted,
)
from steadyloop.limits import estimate_fixed_tokens
from steadyloop.messages import AssistantMessage, Message, ToolCall, ToolResult, Usage, UserMessage
from steadyloop.models.base import ModelRequest
from steadyloop.output import check_text, nudge_after
from steadyloop.repeats import RepeatGuard
from steadyloop.result import RunResult
from steadyloop.retry import retry_model_call
from steadyloop.transcript import Transcript

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.dispatch import Batch, Dispatcher
    from steadyloop.output import FinalAnswer
    from steadyloop.tracing_spans import Tracing

__all__ = ["Run"]

CUT_OFF_TEXT = (
    "your call to {name} was cut off by the output token limit before its arguments were "
    "complete, so it was not run; send it again with shorter arguments"
)
_UNCHECKED: Any = object()  # a text run without `output_check`: its output is the last text
UNANSWERED_TEXT = "not run: the conversation went on before this call was answered"
INTERRUPTED_TEXT = (
    "interrupted: the run stopped while this call was running, so its outcome is unknown; it was "
    "not run again because {name} is not marked idempotent. Check its effect before calling it "
    "again"
)


class Run:
    """The state and steps of one `Agent.run`."""

    def __init__(
        self,
        agent: Agent[Any],
        dispatcher: Dispatcher,
        prompt: UserMessage | str | None,
        history: Sequence[Message],
        notify: Callable[[Event], None] | None = None,
        *,
        streaming: bool = False,
        run_id: str | None = None,
        commit: Callable[[], Awaitable[None]] | None = None,
        turns_used: int = 0,
        usage: Usage | None = None,
        recovered: Mapping[str, ToolResult] | None = None,
        tracing: Tracing | None = None,
        answer: FinalAnswer | None = None,
        deps: Any = None,
        decisions: Mapping[str, Decision] | None = None,
    ) -> None:
        """`prompt` None resumes: the history is this run's own log, `turns_used` its model
        calls and `usage` so far, and `recovered` the results of calls that finished before it
        stopped. `commit` makes what was recorded so far durable (the run log's write-ahead
        points). `tracing`: the run's spans, when it is traced (the dispatcher has them too).
        `answer` is the `final_answer` tool of a run with a typed answer (one of the
        dispatcher's tools); `deps` what the run's `RunContext` carries; `decisions` those
        made for the calls a paused run waits on (they are run, or denied)."""
        self.agent = agent
        self.deps = deps
        self.decisions = decisions or {}
        self.approvals: Approvals | None = None
        hooks: list[Effects] = []
        if any(tool.context_types for tool in dispatcher.tools):
            hooks.append(ToolContext(self._tool_context))
        if self.decisions or any(tool.approve for tool in dispatcher.tools):
            self.approvals = Approvals(
                agent.approver, self.decisions, self._tool_context, notify, commit
            )
            hooks.append(self.approvals)
        if hooks:
            dispatcher = dispatcher.around(hooks)
        self.dispatcher = dispatcher
        self.prompt = UserMessage(prompt) if isinstance(prompt, str) else prompt
        self.tracing = tracing
        self.effects = agent.effects if tracing is None else tracing.around(agent.effects)
        self.notify = notify
        self.streaming = streaming
        self.run_id = run_id
        self.commit = commit
        self.transcript = Transcript(history, agent.estimate_tokens)
        self.history_length = len(self.transcript)
        self.turns = turns_used
        self.recovered = recovered
        self.usage = usage if usage is not None else Usage()
        self.guard = RepeatGuard(agent.limits.max_repeats, agent.limits.max_same_results)
        self.specs = tuple(tool.spec for tool in dispatcher.tools)
        self.instructions = agent.instructions if not callable(agent.instructions) else None
        self.fixed_tokens = estimate_fixed_tokens(self.instructions, self.specs)
        self.stop_reason = "end_turn"
        self.answer = answer
        # A text answer's output once `output_check` accepted it; None until then.
        self.checked: Any = _UNCHECKED if agent.output_check is None else None
        self.pause: Pause | None = None

    async def execute(self) -> RunResult[Any]:
        """Runs to an answer; a limit raises `LimitExceeded` with the partial result."""
        prompt = self.prompt
        await self._check_cost_limit_applies()
        self._emit(
            RunStarted(
                self.run_id,
                self.agent.model.name,
                prompt.text if prompt is not None else "",
                self.history_length,
            )
        )
        if await self._answer_unanswered_calls():
            return self._finish()
        recovering = self.answer if self.recovered is not None else None
        if recovering is not None and await recovering.recover(self.transcript.entries):
            return self._finish()  # resumed after its answer was accepted: no model call
        if prompt is not None:
            self._append(prompt)
        if callable(self.agent.instructions):
            await self._make_instructions()
        while True:
            await self._check_limits()
            await self._commit()  # every result is logged before the model reads it
            reply = await self._call_model()
            self._append(reply)
            if not reply.tool_calls:
                nudge = nudge_after(reply, self.answer)
                if nudge is None:
                    nudge = await self._check_text(reply)
                if nudge is not None:  # not an answer (or refused): say why, ask again
                    self._append(nudge)
                    continue
                if reply.stop_reason == "max_tokens":
                    self.stop_reason = "max_tokens"
                return self._finish()
            await self._commit()  # the reply is logged before any of its calls starts
            if await self._run_tools(reply):
                return self._finish()

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
            pending=self.pause.pending if self.pause is not None else (),
            _pause=self.pause,
        )

    # -- steps -------------------------------------------------------------------------------

    async def _make_instructions(self) -> None:
        """Callable instructions make this run's system prompt, once; the text is logged."""
        text = await make_instructions(self.agent.instructions, self.context())
        self.instructions = text
        self.fixed_tokens = estimate_fixed_tokens(text, self.specs)
        self._emit(InstructionsMade(text or ""))

    async def _check_text(self, reply: AssistantMessage) -> UserMessage | None:
        """Runs the agent's `output_check` on a text answer; the refusal to append, if any."""
        check = self.agent.output_check
        if check is None or self.answer is not None:
            return None
        try:
            self.checked, refusal = await check_text(check, reply.text)
        except FatalToolError as exc:
            self._raise_stop(exc)
        return refusal

    async def _check_limits(self) -> None:
        limits = self.agent.limits
        if self.turns >= limits.max_turns:
            self._stop(TurnLimitExceeded, f"turn limit reached: {limits.max_turns} model calls")
        self._check_cost()
        tokens = self.transcript.context_tokens(self.fixed_tokens)
        compaction = self.agent.compaction
        if compaction is not None and tokens > compaction.trigger * limits.max_context_tokens:
            await self._compact()
            self._check_cost()  # the summary was a paid call too
            tokens = self.transcript.context_tokens(self.fixed_tokens)
        if tokens > limits.max_context_tokens:
            self._stop(
                ContextLimitExceeded,
                f"context limit reached: the next request needs about {tokens} tokens, "
                f"over max_context_tokens={limits.max_context_tokens}",
            )

    def _check_cost(self) -> None:
        limit = self.agent.limits.max_cost_usd
        cost = self.usage.cost_usd
        if limit is not None and cost is not None and cost >= limit:
            self._stop(
                CostLimitExceeded,
                f"cost limit reached: the run has cost ${cost:.4f}, max_cost_usd={limit:g}",
            )

    async def _check_cost_limit_applies(self) -> None:
        """A cost limit is kept only with a known price: without one the run does not start."""
        if self.agent.limits.max_cost_usd is not None and not await has_price(self.agent.model):
            raise ConfigError(
                f"Limits(max_cost_usd=...) needs the price of {self.agent.model.name}, and the "
                "price tables (genai-prices) have none: name the model PROVIDER:MODEL as the "
                "tables do (openai:gpt-4.1-mini), or drop the cost limit"
            )

    async def _call_model(self) -> AssistantMessage:
        self.turns += 1
        compacted = False
        while True:
            try:
                reply = await self._request_with_retries()
                break
            except ContextWindowExceeded as exc:
                if self.agent.compaction is None or compacted or not await self._compact():
                    self._stop(ContextLimitExceeded, f"the provider says: {exc}", cause=exc)
                compacted = True
                self._check_cost()
        self.usage += reply.request_usage()
        return self.transcript.with_unique_call_ids(reply)

    async def _request_with_retries(self) -> AssistantMessage:
        request = ModelRequest(self.instructions, self.transcript.view(), self.specs)
        self._emit(
            ModelRequestStarted(
                self.turns,
                self.transcript.context_tokens(self.fixed_tokens),
                self.agent.limits.max_context_tokens,
                len(request.messages),
            )
        )

        def announce(attempt: int, error: ModelError, wait: float) -> None:
            self._emit(ModelRetry(self.turns, attempt, str(error), wait))

        async def call_with_retries() -> AssistantMessage:
            reply = await retry_model_call(
                lambda: self._request(request),
                self.agent.model_retries,
                self.agent.backoff,
                announce,
            )
            return await priced(reply, self.agent.model)  # what the effects see is priced

        effects = self.effects
        if effects is None:
            return await call_with_retries()
        model_call = ModelCall(self.run_id, self.turns, self.agent.model.name, request)
        return await effects.model_call(model_call, call_with_retries)

    async def _request(self, request: ModelRequest) -> AssistantMessage:
        model = self.agent.model
        if not self.streaming:
            return await model.request(request)
        parts = model.stream(request)
        try:
            async for part in parts:
                if isinstance(part, AssistantMessage):
                    return part
                self._emit(part)
        finally:
            # Close the stream (and its connection) as soon as the reply is in.
            close = getattr(parts, "aclose", None)
            if close is not None:
                await close()
        raise ModelError(f"{model.name}: the stream ended without a reply", retryable=True)

    async def _run_tools(self, reply: AssistantMessage) -> bool:
        """Answers the reply's calls; True when the run ends here: with an accepted typed
        answer, or paused until gated calls are decided."""
        if reply.stop_reason == "max_tokens":
            for call in reply.tool_calls:
                self._append(_error_result(call, CUT_OFF_TEXT.format(name=call.name)))
            return False
        self.usage += Usage(tool_calls=len(reply.tool_calls))
        if self.answer is not None:
            self.answer.expect(reply.tool_calls)
        batch = await self.dispatcher.run(
            reply.tool_calls, self.notify, run_id=self.run_id, turn=self.turns
        )
        if self._paused(batch):
            return True
        checked = self.guard.check_turn(batch.outcomes)
        for result in checked.results:
            self._append(result)
        if batch.stop is not None:
            self._raise_stop(batch.stop)
        if checked.stop is not None:
            self._stop(RepeatLimitExceeded, checked.stop)
        return self.answer is not None and self.answer.accepted

    def _paused(self, batch: Batch, answers: Mapping[str, ToolResult] | None = None) -> bool:
        """Pauses the run while some of the turn's calls wait for a decision. The turn's
        answers, in call order, end the paused transcript: what ran, and each waiting call
        answered as waiting, so a run continued from these messages knows what was done.
        `resume` goes on from the reply instead: it answers the calls again, the ones that ran
        with their held results and the decided ones as decided. `answers`: the turn's
        results (in call order), when not just the batch's."""
        approvals = self.approvals
        if approvals is None or not approvals.pending or batch.stop is not None:
            return False
        if answers is None:
            answers = {outcome.call.id: outcome.result for outcome in batch.outcomes}
        waiting = {call.call_id for call in approvals.pending}
        held = {call_id: r for call_id, r in answers.items() if call_id not in waiting}
        self.pause = Pause(tuple(approvals.pending), held, self.turns)
        self.stop_reason = "approval"
        for result in answers.values():
            self._append(result)
        return True

    async def _compact(self) -> bool:
        """Appends a summary of the older messages; False when nothing could be summarised."""
        compaction = self.agent.compaction
        assert compaction is not None
        cut = self.transcript.compaction_cut(compaction.keep_recent)
        if cut is None:
            return False
        before = self.transcript.context_tokens(self.fixed_tokens)
        text, reply = await compaction.summary_text(
            self.transcript.to_summarise(cut),
            self.agent.model,
            self.agent.limits.max_context_tokens * 2,
        )
        if reply is not None:
            reply = await priced(reply, self.agent.model)
            self.usage += reply.request_usage()
        summary = self.transcript.summary_for(cut, text)
        self._append(summary)
        after = self.transcript.context_tokens(self.fixed_tokens)
        self._emit(Compacted(summary, before, after))
        return True

    # -- bookkeeping -------------------------------------------------------------------------

    def context(self, call_id: str | None = None, turn: int | None = None) -> RunContext[Any]:
        """The run as a tool call (or an approver, or instructions) sees it now."""
        turn = self.turns if turn is None else turn
        usage, messages = self.usage, self.transcript.entries
        return RunContext(self.deps, self.run_id, turn, call_id, usage, messages)

    def _tool_context(self, invocation: ToolInvocation) -> RunContext[Any]:
        return self.context(invocation.call.id, invocation.turn)

    async def _answer_unanswered_calls(self) -> bool:
        """Answers the calls of the last reply that have no result, so the history stays valid;
        True when some of them still wait for a decision (the run pauses again).

        With a new prompt they are answered "not run". When resuming, a call that finished
        before the stop gets its logged result, a decided or idempotent one is run (or
        denied), and any other is answered "interrupted" rather than risk doing its effect
        twice.
        """
        # Only a reply at the end (followed by nothing but results) can still be answered in
        # place; calls left open earlier in a history are paired at the wire by the adapters.
        entries = self.transcript.entries
        tail = len(entries)
        while tail and isinstance(entries[tail - 1], ToolResult):
            tail -= 1
        last = entries[tail - 1] if tail else None
        if not isinstance(last, AssistantMessage):
            return False
        answered = {m.call_id for m in entries[tail:] if isinstance(m, ToolResult)}
        unanswered = [c for c in last.tool_calls if c.id not in answered]
        if not unanswered:
            return False
        if self.recovered is None:
            for call in unanswered:
                self._append(_error_result(call, UNANSWERED_TEXT))
            return False
        tools = {t.name: t for t in self.dispatcher.tools}
        rerun = [
            c
            for c in unanswered
            if c.id not in self.recovered
            and (c.id in self.decisions or (c.name in tools and tools[c.name].idempotent))
        ]
        batch = await self.dispatcher.run(rerun, self.notify, run_id=self.run_id, turn=self.turns)
        fresh = {outcome.call.id: outcome.result for outcome in batch.outcomes}
        answers = {
            call.id: self.recovered.get(call.id)
            or fresh.get(call.id)
            or _error_result(call, INTERRUPTED_TEXT.format(name=call.name))
            for call in unanswered
        }
        if self._paused(batch, answers):
            return True
        for call in unanswered:
            self._append(answers[call.id])
        if batch.stop is not None:
            self._raise_stop(batch.stop)
        return False

    async def _commit(self) -> None:
        if self.commit is not None:
            await self.commit()

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

    def _stop(
        self, error: type[LimitExceeded], message: str, cause: BaseException | None = None
    ) -> NoReturn:
        self.stop_reason = error.reason
        self._emit(LimitReached(error.reason, message))
        raise error(message, self._finish()) from cause


def _error_result(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(call.id, call.name, text, is_error=True)
