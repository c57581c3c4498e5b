"""The spans of a traced run, per the OpenTelemetry GenAI semantic conventions.

    invoke_agent                      the run (steadyloop.run_id, usage and cost at the end)
    ├── chat {model}                  one per model call, its retries and fallbacks as events
    ├── execute_tool {tool}           one per tool call, current inside the tool's own code
    │   ├── (the application's spans: the tool's HTTP and database calls)
    │   └── invoke_agent              a sub-agent's run (`Agent.as_tool`), with its own spans
    └── ...                           compaction and limit stops as events on the run span

A `Tracing` is a run's hook around the whole run; the hooks around its calls (an `Effects`,
outermost, around the agent's own) are shared by every run of one model traced to one provider,
so a traced run's dispatcher is made once, like an untraced one's. Each span is made current
while its part runs, so the tool span is the parent of whatever the tool's code traces, in a
worker thread too (sync tools run in a copy of the caller's context).
Content — instructions, messages, tool arguments and results, the texts of errors — is recorded
only when asked for.
"""

from __future__ import annotations

import importlib.metadata
import json
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from steadyloop.approvals import AwaitingApproval
from steadyloop.cost import provider_and_model
from steadyloop.effects import Effects, ModelCall, ToolInvocation, nest
from steadyloop.events import (
    Compacted,
    Event,
    LimitReached,
    ModelFallback,
    ModelRetry,
    ToolCallFinished,
)
from steadyloop.messages import (
    ArgumentsError,
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from steadyloop.models.base import Model
from steadyloop.result import RunResult

__all__ = ["Tracing"]

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
CONVERSATION = "gen_ai.conversation.id"
ERROR_TYPE = "error.type"


class _Shared:
    """What the spans of every run of one model traced to one provider start with, made on the
    first such run: the tracer, the names, and the starting attributes of a run's span without
    ids and of each chat span without content (the SDK copies the attributes it is given, so
    one mapping serves every span); and the hooks around those runs' calls, with content and
    without (`_CallSpans`)."""

    __slots__ = (
        "calls",
        "chat_attributes",
        "chat_name",
        "model",
        "provider",
        "run_attributes",
        "spec",
        "tracer",
    )

    def __init__(self, tracer: Tracer, spec: str) -> None:
        self.tracer = tracer
        self.spec = spec
        provider_name, self.model = provider_and_model(spec)
        self.provider = provider_name or self.model
        self.chat_name = f"chat {self.model}"
        self.chat_attributes: dict[str, Any] = {
            OPERATION: "chat",
            PROVIDER: self.provider,
            REQUEST_MODEL: self.model,
        }
        self.run_attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            PROVIDER: self.provider,
            REQUEST_MODEL: self.model,
        }
        self.calls: dict[bool, _CallSpans] = {}  # by whether they record content

    def call_spans(self, content: bool) -> _CallSpans:
        spans = self.calls.get(content)
        if spans is None:
            spans = self.calls[content] = _CallSpans(self, content)
        return spans


# One tracer per provider, made on its first traced run (making one costs tens of µs); by
# provider, what the spans of each model's runs share. Neither keeps a provider alive.
_tracers: weakref.WeakKeyDictionary[TracerProvider, Tracer] = weakref.WeakKeyDictionary()
_shared: weakref.WeakKeyDictionary[TracerProvider, dict[str, _Shared]] = weakref.WeakKeyDictionary()


def _tracer(provider: TracerProvider) -> Tracer:
    tracer = _tracers.get(provider)
    if tracer is None:
        version = importlib.metadata.version("steadyloop")
        tracer = _tracers[provider] = provider.get_tracer("steadyloop", version)
    return tracer


def _shared_for(provider: TracerProvider | None, model: Model) -> _Shared:
    """What the spans of a run of `model` traced to `provider` (None: the global one) share."""
    if provider is None:
        provider = trace.get_tracer_provider()
    by_model = _shared.get(provider)
    if by_model is None:
        by_model = _shared[provider] = {}
    shared = by_model.get(model.name)
    if shared is None:
        shared = by_model[model.name] = _Shared(_tracer(provider), model.name)
    return shared


class Tracing:
    """The spans of one run: its own around the run (`run`), and, through `around`, one
    around each model and tool call (the hooks, shared by the runs of one model traced to one
    provider, find the run's span as the current one)."""

    __slots__ = ("_calls", "_content", "_run_span", "_tracer_provider", "conversation")

    def __init__(self, provider: TracerProvider | None, content: bool, model: Model) -> None:
        self._tracer_provider = provider
        self._calls = _shared_for(provider, model).call_spans(content)
        self._content = content
        self._run_span: Span | None = None
        self.conversation: str | None = None
        """The session the run is a turn of (`gen_ai.conversation.id` on its span), if any."""

    def for_child(self, model: Model) -> Tracing:
        """The spans of a run that one of this run's tool calls starts (a sub-agent's run):
        the same provider and content setting, for `model`. Its `invoke_agent` span is made
        while the call's `execute_tool` span is current, so the child's spans nest under it."""
        return Tracing(self._tracer_provider, self._content, model)

    def around(self, effects: Effects | None) -> Effects:
        """The call spans around the agent's own effects (the same object for every run of
        these effects, so the agent's tools and their dispatcher serve them all)."""
        return self._calls.around(effects)

    async def run(
        self, run_id: str | None, execute: Callable[[], Awaitable[RunResult]]
    ) -> RunResult:
        """Runs `execute` inside the run's `invoke_agent` span."""
        span = self._run_span = self._start_run(run_id)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            result = await execute()
        except BaseException as exc:
            partial = getattr(exc, "result", None)  # a limit's or a fatal tool error's
            if isinstance(partial, RunResult):
                _record_result(span, partial)
            _record_error(span, exc, self._content)
            raise
        finally:
            otel_context.detach(token)
            self._run_span = None
        _record_result(span, result)
        span.end()
        return result

    # The spans are started by plain functions: their attributes (copied by the span) are
    # garbage at once instead of living as long as the call, as a coroutine's locals would.

    def _start_run(self, run_id: str | None) -> Span:
        shared = self._calls.shared
        attributes = shared.run_attributes
        if run_id is not None or self.conversation is not None:
            attributes = dict(attributes)
            if run_id is not None:
                attributes["steadyloop.run_id"] = run_id
            if self.conversation is not None:
                attributes[CONVERSATION] = self.conversation
        return shared.tracer.start_span(
            "invoke_agent", kind=SpanKind.INTERNAL, attributes=attributes
        )

    def observe(self, event: Event) -> None:
        """Records the run's retries, fallbacks, compactions and limit stops as span events."""
        if isinstance(event, ModelRetry):
            # made inside the call's own span, which is current while it runs
            attributes: dict[str, Any] = {
                "steadyloop.attempt": event.attempt,
                "steadyloop.wait_s": event.wait,
            }
            if self._content:
                attributes["exception.message"] = event.error
            trace.get_current_span().add_event("steadyloop.model_retry", attributes)
        elif isinstance(event, ModelFallback):
            attributes = {
                "steadyloop.fallback.from": event.failed,
                "steadyloop.fallback.to": event.next,
            }
            if self._content:
                attributes["exception.message"] = event.error
            trace.get_current_span().add_event("steadyloop.model_fallback", attributes)
        elif self._run_span is None:
            return
        elif isinstance(event, Compacted):
            attributes = {
                "steadyloop.compaction.replaced": event.summary.replaced,
                "steadyloop.compaction.tokens_before": event.tokens_before,
                "steadyloop.compaction.tokens_after": event.tokens_after,
            }
            if self._content:
                attributes["steadyloop.compaction.summary"] = event.summary.text
            self._run_span.add_event("steadyloop.compaction", attributes)
        elif isinstance(event, LimitReached):
            attributes = {"steadyloop.stop_reason": event.reason}
            if self._content:
                attributes["steadyloop.limit.message"] = event.message
            self._run_span.add_event("steadyloop.limit", attributes)


class _CallSpans(Effects):
    """The hooks that put a span around each model and tool call, made current while the call
    runs (the parent of what it traces, a sub-agent's run included). They keep nothing of any
    one run: the run's own span is the current one as its calls start."""

    __slots__ = ("_around", "_content", "shared")

    def __init__(self, shared: _Shared, content: bool) -> None:
        self.shared = shared
        self._content = content
        # These hooks around the last effects asked for: the agent's effects, made once.
        self._around: tuple[Effects, Effects] | None = None

    def around(self, effects: Effects | None) -> Effects:
        """These hooks around `effects` (outermost)."""
        if effects is None:
            return self
        made = self._around
        if made is None or made[0] is not effects:
            made = self._around = (effects, nest([self, effects]) or self)
        return made[1]

    async def model_call(
        self, call: ModelCall, proceed: Callable[[], Awaitable[AssistantMessage]]
    ) -> AssistantMessage:
        span = self._start_chat(call)
        # current while the call runs (its children's parent); an error ends it as failed
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            reply = await proceed()
        except BaseException as exc:
            _record_error(span, exc, self._content)
            raise
        finally:
            otel_context.detach(token)
        ended = _usage(reply.usage) if reply.usage is not None else {}
        if reply.model is not None:  # the model that answered (which one, for a Fallback)
            ended["gen_ai.response.model"] = self._answered_by(reply.model)
        if reply.response_id is not None:
            ended["gen_ai.response.id"] = reply.response_id
        if reply.stop_reason is not None:
            ended["gen_ai.response.finish_reasons"] = (reply.stop_reason,)
        if self._content:
            ended["gen_ai.output.messages"] = _json([_output_message(reply)])
        span.set_attributes(ended)
        span.end()
        return reply

    async def tool_call(
        self, call: ToolInvocation, proceed: Callable[[], Awaitable[ToolCallFinished]]
    ) -> ToolCallFinished:
        span = self._start_tool(call)
        token = otel_context.attach(trace.set_span_in_context(span))  # as for a model call
        try:
            finished = await proceed()
        except BaseException as exc:
            _record_error(span, exc, self._content)
            raise
        finally:
            otel_context.detach(token)
        ended: dict[str, Any] = {
            "steadyloop.tool.attempts": finished.attempts,
            "steadyloop.tool.truncated": finished.truncated,
        }
        if isinstance(finished, AwaitingApproval):  # deferred: nothing ran, nothing failed
            ended["steadyloop.tool.awaiting_approval"] = True
        elif finished.is_error:
            ended[ERROR_TYPE] = _tool_error_type(call, finished)
            text = finished.result.content if self._content else None
            span.set_status(Status(StatusCode.ERROR, text))
        elif self._content:
            ended["gen_ai.tool.call.result"] = finished.result.content
        span.set_attributes(ended)
        span.end()
        return finished

    def _start_chat(self, call: ModelCall) -> Span:
        shared = self.shared
        attributes = shared.chat_attributes
        if self._content:
            attributes = dict(attributes)
            request = call.request
            if request.instructions:
                attributes["gen_ai.system_instructions"] = _json(
                    [{"type": "text", "content": request.instructions}]
                )
            attributes["gen_ai.input.messages"] = _json(_input_messages(request.messages))
        return shared.tracer.start_span(
            shared.chat_name, kind=SpanKind.CLIENT, attributes=attributes
        )

    def _answered_by(self, spec: str) -> str:
        """The bare name of the model that answered (`spec`, as the reply names it)."""
        if spec == self.shared.spec:
            return self.shared.model
        return provider_and_model(spec)[1]

    def _start_tool(self, call: ToolInvocation) -> Span:
        name = call.call.name
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call.call.id,
            "gen_ai.tool.type": "function",
        }
        if call.tool is not None:
            attributes["gen_ai.tool.description"] = call.tool.description
        if self._content:
            attributes["gen_ai.tool.call.arguments"] = _arguments_text(call.call)
        return self.shared.tracer.start_span(
            f"execute_tool {name}" if name else "execute_tool",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )


def _record_error(span: Span, exc: BaseException, content: bool) -> None:
    """Ends `span` as failed: the error's kind always, its text only with `content`."""
    # the dispatcher carries a run-stopping exception out of a call as `cause`
    cause = getattr(exc, "cause", None)
    error = cause if isinstance(cause, BaseException) else exc
    span.set_attribute(ERROR_TYPE, type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR, str(error) if content else None))
    span.end()


def _record_result(span: Span, result: RunResult) -> None:
    ended = _usage(result.usage)
    ended["steadyloop.stop_reason"] = result.stop_reason
    ended["steadyloop.requests"] = result.usage.requests
    ended["steadyloop.tool_calls"] = result.usage.tool_calls
    span.set_attributes(ended)


def _usage(usage: Usage) -> dict[str, Any]:
    """The conventions' usage attributes (token counts and cost only when they are known)."""
    attributes: dict[str, Any] = {}
    if usage.total_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
        attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    if usage.cache_read_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.cost_usd is not None:
        attributes["steadyloop.cost_usd"] = usage.cost_usd
    return attributes


def _tool_error_type(call: ToolInvocation, finished: ToolCallFinished) -> str:
    if call.tool is None:
        return "unknown_tool"
    if finished.cancelled:
        return "cancelled"
    return "tool_error"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _arguments_text(call: ToolCall) -> str:
    """The arguments as JSON text; text that is not a JSON object as the model sent it."""
    try:
        return call.arguments_json()
    except ArgumentsError:
        return str(call.arguments)


def _arguments_value(call: ToolCall) -> object:
    """The arguments as an object, as the conventions ask; text that is not a JSON object as
    the model sent it."""
    try:
        return dict(call.parsed_arguments())
    except ArgumentsError:
        return call.arguments


def _input_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The model's view in the conventions' input-messages shape."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "parts": [{"type": "text", "content": message.text}]})
        elif isinstance(message, AssistantMessage):
            out.append(_output_message(message))
        elif isinstance(message, ToolResult):
            part = {
                "type": "tool_call_response",
                "id": message.call_id,
                "response": message.content,
            }
            out.append({"role": "tool", "parts": [part]})
        else:
            out.append({"role": "user", "parts": [{"type": "text", "content": message.note}]})
    return out


def _output_message(reply: AssistantMessage) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if reply.text:
        parts.append({"type": "text", "content": reply.text})
    for call in reply.tool_calls:
        parts.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": _arguments_value(call),
            }
        )
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if reply.stop_reason is not None:
        message["finish_reason"] = reply.stop_reason
    return message
