"""Typed answers: a run with `output=SomeType` ends when the model calls `final_answer`.

The model answers through a tool, `final_answer`, whose schema comes from the same code as every
tool's, so a bad answer gets the same field-by-field error text and the run goes on (a turn
spent; `max_turns` and the repeat guard bound it). One mechanism for every provider: no
`tool_choice=required`, no provider JSON mode. A reply in text alone while the answer is due is
followed by a visible instruction to call `final_answer`; a `final_answer` call beside other
calls is refused ("call it alone") while the others run.

The same rules cover runs answered in text: an empty reply (no text, no calls) is no answer,
so it is followed by a visible instruction too (`nudge_after`), and an `output_check` runs on
the text as it does on a typed answer (`check_text`): its refusal is sent back to the model.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from steadyloop import texts
from steadyloop.errors import ConfigError, ToolError
from steadyloop.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from steadyloop.tools import ArgumentsError, BoundCall, Tool, ToolOutput, ToolSpec

__all__ = [
    "ACCEPTED_TEXT",
    "ALONE_TEXT",
    "EMPTY_REPLY_TEXT",
    "FINAL_ANSWER",
    "NUDGE_TEXT",
    "REFUSED_TEXT",
    "AnswerTools",
    "FinalAnswer",
    "OutputCheck",
    "OutputSpec",
    "check_text",
    "nudge_after",
    "output_spec",
]

FINAL_ANSWER = "final_answer"
ACCEPTED_TEXT = texts.ACCEPTED
ALONE_TEXT = texts.ALONE
NUDGE_TEXT = texts.NUDGE
REFUSED_TEXT = texts.REFUSED
EMPTY_REPLY_TEXT = texts.EMPTY_REPLY
DESCRIPTION = (
    "Give your final answer with this tool once you have everything you need; the run ends "
    "when it is accepted. Call it alone, not beside other tool calls."
)

OutputCheck = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """An answer type made into a tool: its spec and the validator giving the typed value."""

    output_type: Any
    spec: ToolSpec
    validate: Callable[[Any], Any]


def output_spec(output_type: Any, tool_names: Sequence[str]) -> OutputSpec | None:
    """The answer tool for `output_type`; None for `str` (the answer is the reply's text).

    Raises `ConfigError` when pydantic cannot describe the type, or a tool already has the name.
    """
    if output_type is None or output_type is str:
        return None
    if FINAL_ANSWER in tool_names:
        raise ConfigError(
            f"a tool is named {FINAL_ANSWER!r}, the name the model answers a typed run with: "
            "rename the tool with @tool(name=...)"
        )
    from steadyloop.schema import describe_output

    validate, spec = describe_output(output_type, FINAL_ANSWER, DESCRIPTION)
    return OutputSpec(output_type, spec, validate)


def nudge_after(reply: AssistantMessage, answer: FinalAnswer | None) -> UserMessage | None:
    """The visible instruction that follows a reply without tool calls which cannot end the
    run: any reply while a typed answer is due, or an empty one. None: the reply answers.

    It costs a turn, so `max_turns` bounds a model that keeps replying this way. An empty
    reply cut off by the output limit ends the run as `stop_reason="max_tokens"` instead:
    asking again would be cut off the same way.
    """
    if answer is not None:
        return UserMessage(NUDGE_TEXT)
    if reply.text.strip() or reply.stop_reason == "max_tokens":
        return None
    return UserMessage(EMPTY_REPLY_TEXT)


async def check_text(check: OutputCheck, text: str) -> tuple[Any, UserMessage | None]:
    """Runs `output_check` on a text answer (a sync check in a thread, as for a typed answer):
    (the output, None), or (None, the message sending the model back to work) when the check
    raises `ToolError`."""
    try:
        if inspect.iscoroutinefunction(check):
            value = await check(text)
        else:
            value = await asyncio.to_thread(check, text)
            if inspect.isawaitable(value):
                value = await value
    except ToolError as exc:
        return None, UserMessage(REFUSED_TEXT.format(reason=exc))
    return value, None


class AnswerTools:
    """An agent's answer types and the `final_answer` tool each run gets.

    A spec is built once per type (pydantic takes about a millisecond); the agent's own type
    is built at once, so a type pydantic cannot describe fails when the agent is made.
    """

    def __init__(
        self, output_type: Any, check: OutputCheck | None, tool_names: Sequence[str]
    ) -> None:
        self.default = output_type
        self._check = check
        self._tool_names = tuple(tool_names)
        self._specs: dict[Any, OutputSpec | None] = {}
        self._spec(output_type)

    def for_run(self, output_type: Any) -> FinalAnswer | None:
        """A fresh `final_answer` tool for a run answering `output_type` (None: the agent's
        type); None when the answer is text."""
        spec = self._spec(self.default if output_type is None else output_type)
        return None if spec is None else FinalAnswer(spec, self._check)

    def _spec(self, output_type: Any) -> OutputSpec | None:
        try:
            return self._specs[output_type]
        except KeyError:
            spec = self._specs[output_type] = output_spec(output_type, self._tool_names)
            return spec
        except TypeError:  # an unhashable type (Annotated with odd metadata): not cached
            return output_spec(output_type, self._tool_names)


class FinalAnswer(Tool):
    """The `final_answer` tool of one run: validates the answer, runs `check`, keeps the value.

    One per run: `expect(calls)` is told each reply's calls before they are dispatched, so a
    `final_answer` beside other calls is refused; the accepted value is in `value` once
    `accepted` is true.
    """

    def __init__(self, output: OutputSpec, check: OutputCheck | None) -> None:
        super().__init__(output.spec)
        self._output = output
        self._check = check
        self._alone = True
        self.accepted = False
        self.value: Any = None

    def expect(self, calls: Sequence[ToolCall]) -> None:
        """Tells the tool the calls of the reply about to be dispatched."""
        self._alone = len(calls) == 1

    def bind(self, arguments: Any) -> BoundCall:
        if not self._alone:
            raise ArgumentsError(ALONE_TEXT)
        from pydantic import ValidationError

        try:
            value = self._output.validate(arguments)
        except ValidationError as exc:
            from steadyloop.schema import describe_validation_error

            raise ArgumentsError(describe_validation_error(self.name, exc)) from None
        check = self._check
        if check is None:
            return BoundCall(_same, {"value": value}, is_async=True)
        # A sync check runs in a tool thread, like a sync tool.
        return BoundCall(functools.partial(check, value), {}, inspect.iscoroutinefunction(check))

    def render(self, value: Any) -> ToolOutput:
        self.accepted, self.value = True, value
        return ToolOutput(ACCEPTED_TEXT)

    async def recover(self, messages: Sequence[Message]) -> bool:
        """Takes again the answer a resumed run had accepted: True when `messages` end with a
        lone `final_answer` call answered "accepted", as the log of a run stopped between
        accepting its answer and being marked finished ends. The value comes from the call's
        logged arguments, validated and checked again, so no model is asked for it twice."""
        if len(messages) < 2:
            return False
        reply, answer = messages[-2], messages[-1]
        if not (
            isinstance(reply, AssistantMessage)
            and isinstance(answer, ToolResult)
            and [call.id for call in reply.tool_calls] == [answer.call_id]
            and answer.name == self.name
            and answer.content == ACCEPTED_TEXT
            and not answer.is_error
        ):
            return False
        self.expect(reply.tool_calls)
        try:
            bound = self.bind(reply.tool_calls[0].parsed_arguments())
            if bound.is_async:
                value = await bound.fn(**bound.kwargs)
            else:
                value = await asyncio.to_thread(bound.fn, **bound.kwargs)
        except (ArgumentsError, ToolError):  # the output type or check changed since: ask again
            return False
        self.render(value)
        return True


async def _same(value: Any) -> Any:
    return value
