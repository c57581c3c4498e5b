"""Fake models for tests and offline runs; they ship with the library and use no network.

- `FunctionModel(fn)`: `fn(messages, tools)` (sync or async) decides each reply.
- `ScriptedModel(replies)`: returns the replies in order; an exception item is raised instead.
- `TestModel()`: calls every tool once with arguments made from its schema, then answers with a
  text built from the results (a typed run: calls `final_answer` with arguments made from its
  schema). What `--model test` runs.

Each records the requests it was sent in `.requests`, for assertions.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import re
import string
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from steadyloop.errors import ConfigError, ModelError
from steadyloop.events import TextDelta
from steadyloop.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from steadyloop.models.base import Model, ModelRequest, StreamPart
from steadyloop.output import FINAL_ANSWER
from steadyloop.tools import ToolSpec

__all__ = ["FunctionModel", "ScriptedModel", "TestModel"]

ReplyFunction = Callable[
    [Sequence[Message], Sequence[ToolSpec]], AssistantMessage | Awaitable[AssistantMessage]
]


class _RecordingModel(Model):
    __test__ = False

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        """Streams the reply's text word by word, as a real provider would."""
        reply = await self.request(request)
        words = reply.text.split(" ")
        for index, word in enumerate(words):
            piece = word if index == len(words) - 1 else word + " "
            if piece:
                yield TextDelta(piece)
        yield reply


class FunctionModel(_RecordingModel):
    """A model whose replies come from `fn(messages, tools)`; `messages` is the model's view."""

    def __init__(self, fn: ReplyFunction, *, name: str = "function") -> None:
        super().__init__()
        self.fn = fn
        self.name = name

    async def request(self, request: ModelRequest) -> AssistantMessage:
        self.requests.append(request)
        reply = self.fn(request.messages, request.tools)
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, AssistantMessage):
            raise TypeError(f"FunctionModel fn must return an AssistantMessage, got {reply!r}")
        return reply


class ScriptedModel(_RecordingModel):
    """Returns `replies` in order (a str is a text reply); an exception item is raised."""

    def __init__(
        self, replies: Iterable[AssistantMessage | str | BaseException], *, name: str = "scripted"
    ) -> None:
        super().__init__()
        self.replies = [_scripted(reply, index) for index, reply in enumerate(replies)]
        self.name = name

    async def request(self, request: ModelRequest) -> AssistantMessage:
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self.replies):
            raise ModelError(
                f"ScriptedModel has no reply left for request {index + 1} "
                f"(it was given {len(self.replies)})"
            )
        reply = self.replies[index]
        if isinstance(reply, BaseException):
            raise reply
        return reply


def _scripted(
    reply: AssistantMessage | str | BaseException, index: int
) -> AssistantMessage | BaseException:
    """One scripted reply (a str as a text reply); `ConfigError` for anything else."""
    if isinstance(reply, str):
        return AssistantMessage(reply)
    if not isinstance(reply, AssistantMessage | BaseException):
        raise ConfigError(
            f"ScriptedModel reply {index} is a {type(reply).__name__}: give a str, an "
            "AssistantMessage(text, tool_calls=...) or an exception to raise"
        )
    return reply


class TestModel(_RecordingModel):
    """Offline model: calls every tool once with generated arguments, then sums up the results.

    In a typed run (a `final_answer` tool is offered) it calls the other tools first and then
    `final_answer`, with arguments made from its schema, in the next turn.
    """

    def __init__(self, *, name: str = "test") -> None:
        super().__init__()
        self.name = name

    async def request(self, request: ModelRequest) -> AssistantMessage:
        self.requests.append(request)
        results = _results_since_last_user(request.messages)
        tools = [spec for spec in request.tools if spec.name != FINAL_ANSWER]
        answer = next((spec for spec in request.tools if spec.name == FINAL_ANSWER), None)
        if results is None and tools:
            return _calls(tools)
        if answer is not None:
            return _calls([answer])
        return AssistantMessage(_answer(request.messages, results or ()), stop_reason="end_turn")


def _calls(tools: Sequence[ToolSpec]) -> AssistantMessage:
    calls = tuple(
        ToolCall(f"call_{i}", spec.name, json.dumps(example_arguments(spec.parameters)))
        for i, spec in enumerate(tools)
    )
    return AssistantMessage(tool_calls=calls, stop_reason="tool_use")


def _results_since_last_user(messages: Sequence[Message]) -> list[ToolResult] | None:
    """The tool results after the last user message, or None if no tool ran since."""
    results: list[ToolResult] = []
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, ToolResult):
            results.append(message)
    return list(reversed(results)) or None


def _answer(messages: Sequence[Message], results: Sequence[ToolResult]) -> str:
    prompt = next((m.text for m in reversed(messages) if isinstance(m, UserMessage)), "")
    if not results:
        return f"(test model) You said: {prompt}"
    lines = [f"(test model) Ran {len(results)} tool call(s) for: {prompt}"]
    for result in results:
        status = "error" if result.is_error else "ok"
        lines.append(f"- {result.name} [{status}]: {result.content[:200]}")
    return "\n".join(lines)


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a JSON schema's required properties (defaults where given)."""
    definitions = schema.get("$defs", {})
    properties = schema.get("properties", {})
    return {
        name: _example(properties[name], definitions)
        for name in schema.get("required", ())
        if name in properties
    }


def _example(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> Any:
    if "$ref" in schema:
        return _example(definitions.get(schema["$ref"].rsplit("/", 1)[-1], {}), definitions)
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key, ()) if o.get("type") != "null"]
        if options:
            return _example(options[0], definitions)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object":
        return {
            name: _example(schema.get("properties", {})[name], definitions)
            for name in schema.get("required", ())
            if name in schema.get("properties", {})
        }
    if kind == "array":
        return _example_array(schema, definitions)
    if kind == "integer":
        return _multiple_near(_example_integer(schema), schema)
    if kind == "number":
        return _multiple_near(_example_number(schema), schema)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _example_string(schema)


def _example_array(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> list[Any]:
    """One value per `prefixItems` entry (a tuple), then `items` up to `minItems`."""
    values = [_example(item, definitions) for item in schema.get("prefixItems", ())]
    missing = schema.get("minItems", 0) - len(values)
    if missing > 0:
        values += [_example(schema.get("items", {}), definitions)] * missing
    return values


# Values that pydantic accepts for the string formats it emits for dates, ids and links.
_FORMAT_EXAMPLES = {
    "date": "2026-01-01",
    "date-time": "2026-01-01T12:00:00Z",
    "time": "12:00:00",
    "duration": "PT1S",
    "uuid": "12345678-1234-4678-9234-123456789abc",
    "uri": "https://example.com/",
}


def _example_string(schema: Mapping[str, Any]) -> str:
    if schema.get("format") in _FORMAT_EXAMPLES:
        return _FORMAT_EXAMPLES[schema["format"]]
    if "pattern" in schema and (text := _matching(schema["pattern"])) is not None:
        return text
    text = "example".ljust(int(schema.get("minLength", 0)), "x")
    maximum = schema.get("maxLength")
    return text[: int(maximum)] if maximum is not None else text


def _example_integer(schema: Mapping[str, Any]) -> int:
    value = 1
    if "minimum" in schema:
        value = max(value, math.ceil(schema["minimum"]))
    if "exclusiveMinimum" in schema:
        value = max(value, math.floor(schema["exclusiveMinimum"]) + 1)
    if "maximum" in schema:
        value = min(value, math.floor(schema["maximum"]))
    if "exclusiveMaximum" in schema:
        value = min(value, math.ceil(schema["exclusiveMaximum"]) - 1)
    return value


def _example_number(schema: Mapping[str, Any]) -> float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is not None and high is not None:
        return (float(low) + float(high)) / 2
    if low is not None:
        return float(low) + 1
    if high is not None:
        return float(high) - 1
    return 1.0


def _multiple_near(value: float, schema: Mapping[str, Any]) -> float:
    """`value`, or for a `multipleOf` the multiple next to it that stays within the bounds."""
    step: float | None = schema.get("multipleOf")
    if not step:
        return value
    count = value / step
    for multiple in (round(count) * step, math.ceil(count) * step, math.floor(count) * step):
        if _within(multiple, schema):
            return multiple
    return value


def _within(value: float, schema: Mapping[str, Any]) -> bool:
    return bool(
        schema.get("minimum", -math.inf) <= value <= schema.get("maximum", math.inf)
        and schema.get("exclusiveMinimum", -math.inf) < value
        and value < schema.get("exclusiveMaximum", math.inf)
    )


def _matching(pattern: str) -> str | None:
    """A short string that `pattern` matches, or None when this cannot make one.

    Built from Python's own parse of the regex (the parser `re` compiles with).
    """
    try:
        parser = importlib.import_module("re._parser")
        text = _sample(parser.parse(pattern), {})
    except Exception:  # a pattern Python reads differently, or a construct not sampled here
        return None
    return text if re.search(pattern, text) else None


def _sample(items: Iterable[tuple[Any, Any]], groups: dict[int, str]) -> str:
    """Text a parsed regex matches: fewest repeats, first alternative, a fitting character."""
    out: list[str] = []
    for op, arg in items:
        kind = str(op)
        if kind == "LITERAL":
            out.append(chr(arg))
        elif kind == "NOT_LITERAL":
            out.append(next(c for c in _CHARACTERS if ord(c) != arg))
        elif kind == "ANY":
            out.append("a")
        elif kind == "IN":
            out.append(_class_member(arg))
        elif kind in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            fewest, _, body = arg
            out.append("".join(_sample(body, groups) for _ in range(fewest)))
        elif kind == "SUBPATTERN":
            group, _, _, body = arg
            out.append(text := _sample(body, groups))
            groups[group] = text
        elif kind == "BRANCH":
            out.append(_sample(arg[1][0], groups))
        elif kind == "GROUPREF":
            out.append(groups.get(arg, ""))
        elif kind not in ("AT", "ASSERT", "ASSERT_NOT"):  # anchors and look-arounds: no text
            raise ValueError(f"cannot sample {kind}")
    return "".join(out)


# Characters tried, in order, for a class that does not name its members (`\\w`, `[^,]`).
_CHARACTERS = string.ascii_letters + string.digits + string.punctuation + " "
_CATEGORIES = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


def _class_member(members: list[tuple[Any, Any]]) -> str:
    """A character of a class such as `[a-z_]`, `[^,;]` or `\\d`."""
    negated = str(members[0][0]) == "NEGATE"
    if negated:
        members = members[1:]
    elif str(members[0][0]) in ("LITERAL", "RANGE"):
        first = members[0][1]
        return chr(first if isinstance(first, int) else first[0])
    return next(c for c in _CHARACTERS if _in_class(c, members) != negated)


def _in_class(char: str, members: list[tuple[Any, Any]]) -> bool:
    code = ord(char)
    for op, arg in members:
        kind = str(op)
        if (
            (kind == "LITERAL" and code == arg)
            or (kind == "RANGE" and arg[0] <= code <= arg[1])
            or (kind == "CATEGORY" and re.fullmatch(_CATEGORIES[str(arg)], char))
        ):
            return True
    return False
