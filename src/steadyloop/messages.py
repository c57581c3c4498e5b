"""The canonical transcript vocabulary: frozen values, independent of any provider's wire format.

Every message round-trips through JSON with `to_dict()` and `message_from_dict()` (or the
class's own `from_dict`); the `type` key says which class a dict is. A reply's token and call
counts are a `Usage` (`steadyloop.usage`), importable from here too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from steadyloop import texts
from steadyloop.errors import ConfigError
from steadyloop.media import Document, Image, Part, part_from_dict, part_to_dict
from steadyloop.usage import Usage

__all__ = [
    "ArgumentsError",
    "AssistantMessage",
    "Image",
    "Message",
    "Native",
    "Prompt",
    "Reasoning",
    "Summary",
    "ToolCall",
    "ToolResult",
    "Usage",
    "UserMessage",
    "canonical_arguments",
    "message_from_dict",
    "user_message",
]

# What a run is asked: text, or text, images and documents in order.
Prompt: TypeAlias = str | Sequence[Part]


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the user said: `text`, and when the prompt had images or documents, all its `parts`
    in order (`text` then holds its text parts, joined)."""

    text: str
    parts: tuple[Part, ...] = ()
    type: ClassVar[str] = "user"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "text": self.text}
        if self.parts:
            out["parts"] = [part_to_dict(part) for part in self.parts]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UserMessage:
        parts = tuple(part_from_dict(part) for part in data.get("parts", ()))
        return cls(text=data["text"], parts=parts)


def user_message(prompt: Prompt) -> UserMessage:
    """The message for a prompt: a str, or a sequence of str, `Image` and `Document`."""
    if isinstance(prompt, str):
        return UserMessage(prompt)
    if isinstance(prompt, bytes | bytearray | memoryview | Mapping) or not isinstance(
        prompt, Sequence
    ):
        raise ConfigError(
            f"the prompt must be a str or a list of str, Image and Document parts, got "
            f"{type(prompt).__name__}: pass the text (bytes: decode them, or wrap an image's "
            "bytes as Image.from_bytes(...))"
        )
    parts = tuple(prompt)
    for part in parts:
        if not isinstance(part, str | Image | Document):
            raise ConfigError(
                f"a prompt part must be a str, an Image or a Document, got "
                f"{type(part).__name__}: make it with Image.from_path(...) or "
                "Document.from_path(...)"
            )
    text = "\n".join(part for part in parts if isinstance(part, str))
    media = any(not isinstance(part, str) for part in parts)
    return UserMessage(text, parts if media else ())


class ArgumentsError(Exception):
    """A tool call's arguments cannot be used: not JSON, not a JSON object, or not what the tool
    takes. The message says which, for the model to fix its call."""


# How much of unreadable arguments an error quotes back to the model.
_RAW_PREVIEW = 200

_DECODER = json.JSONDecoder()

# A `ToolCall._parse` whose parse was taken: the text is a JSON object, and nothing is kept.
_READ = ()


@dataclass(frozen=True, init=False)
class ToolCall:
    """One tool call the model asked for.

    `arguments` is the raw JSON string the model sent (or a mapping, when a provider delivers an
    object); parsing and validation happen at dispatch so a malformed call is answered, not lost.
    Read them with `parsed_arguments()` or `arguments_json()`, the one reading of each.
    """

    # `_parse` is not a field: `[parse]` once `arguments_json()` has read the text, until the
    # next `parsed_arguments()` takes it (see there), then `_READ`; never compared, copied or
    # pickled.
    __slots__ = ("_parse", "arguments", "id", "name")

    id: str
    name: str
    arguments: str | Mapping[str, Any]
    type: ClassVar[str] = "tool_call"
    if TYPE_CHECKING:  # the slot, for the type checker only: at run time it is not a field
        _parse: list[dict[str, Any]] | tuple[()] | None = field(init=False, compare=False)

    def __init__(self, id: str, name: str, arguments: str | Mapping[str, Any]) -> None:
        set_slot = object.__setattr__  # frozen
        set_slot(self, "id", id)
        set_slot(self, "name", name)
        set_slot(self, "arguments", arguments)
        set_slot(self, "_parse", None)

    def parsed_arguments(self) -> Mapping[str, Any]:
        """The arguments as a mapping; `""`, whitespace and `null` mean no arguments.

        Raises `ArgumentsError` with the parser's complaint (and the start of the text) for text
        that is not a JSON object. Text is read into a mapping of the caller's own each time;
        the one `arguments_json()` made checking it goes to the first caller only (a reply's
        calls are measured as they join the transcript, then dispatched: one parse serves both).
        """
        raw = self.arguments
        if not isinstance(raw, str):
            return raw
        kept = self._parse
        if isinstance(kept, list):
            try:
                value: dict[str, Any] = kept.pop()  # atomic: one caller takes it
            except IndexError:  # another thread took it first
                pass
            else:
                object.__setattr__(self, "_parse", _READ)
                return value
        return _parse(raw)

    def arguments_json(self) -> str:
        """The arguments as JSON object text: the model's own text, byte for byte, when it is
        one (a provider's prompt cache matches on the exact bytes it produced); otherwise the
        JSON of `parsed_arguments()` (a mapping, or `{}` for blank or `null` text).

        Raises `ArgumentsError` as `parsed_arguments()` does for text that is not a JSON object.
        """
        raw = self.arguments
        if not isinstance(raw, str):
            return json.dumps(dict(raw), ensure_ascii=False)
        if self._parse is None:  # not yet known to be a JSON object
            object.__setattr__(self, "_parse", [_parse(raw)])
        return raw if raw.strip() not in ("", "null") else "{}"

    def __getstate__(self) -> list[Any]:
        # the fields only, as a slotted dataclass pickles them
        return [self.id, self.name, self.arguments]

    def __setstate__(self, state: Sequence[Any]) -> None:
        ToolCall.__init__(self, *state)

    def to_dict(self) -> dict[str, Any]:
        args = self.arguments if isinstance(self.arguments, str) else dict(self.arguments)
        return {"id": self.id, "name": self.name, "arguments": args}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(id=data["id"], name=data["name"], arguments=data["arguments"])


@dataclass(frozen=True, slots=True)
class Reasoning:
    """An opaque reasoning item (Anthropic thinking block, Responses reasoning item).

    Kept so the same provider can be sent it back next to its tool calls, as it requires;
    `provider` names the adapter that produced it, and others leave it out.
    """

    provider: str
    data: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "data": dict(self.data)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reasoning:
        return cls(provider=data["provider"], data=data["data"])


@dataclass(frozen=True, slots=True)
class Native:
    """A reply as its provider sent it, kept so that the same API, endpoint and model can be
    sent it back verbatim (reasoning models refuse a history whose reasoning was rebuilt).

    `api` is "anthropic", "openai-responses", "openai-chat" or "google"; `endpoint` the base URL
    the reply came from (no trailing slash); `model` the model name that was sent (Gemini: the
    spec, "google:MODEL" or "vertex:MODEL"); `content` the provider's JSON for the reply with null
    values dropped (Anthropic: the `content` array; Responses: the `output` array; Chat
    Completions: `choices[0].message`; Gemini: the candidate's `parts`, signatures base64 as
    sent); `prefix` a digest of what preceded
    the reply on the wire, for providers that bind reasoning to it (Anthropic).
    """

    api: str
    endpoint: str
    model: str
    content: Any
    prefix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"api": self.api, "endpoint": self.endpoint, "model": self.model}
        out["content"] = self.content
        if self.prefix is not None:
            out["prefix"] = self.prefix
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Native:
        return cls(
            api=data["api"],
            endpoint=data["endpoint"],
            model=data["model"],
            content=data["content"],
            prefix=data.get("prefix"),
        )

    def is_own(self, api: str, endpoint: str, model: str) -> bool:
        """Whether a reply with this content may go back verbatim to `api` at `endpoint` for
        `model`: only to the very API, base URL and model that made it."""
        return (self.api, self.endpoint, self.model) == (api, endpoint.rstrip("/"), model)


# What a request whose reply reported no tokens adds to a run's usage.
_UNREPORTED_REQUEST = Usage(requests=1, unreported=1)


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One model reply: text and tool calls in the order the model produced them.

    `stop_reason` is canonical: "end_turn", "tool_use", "max_tokens" (cut off by the output limit),
    or the provider's own word for anything else. `response_id` is the provider's id of the reply
    (for finding it in the provider's own logs and traces), when it gave one. `native` is the
    reply as the provider sent it (None for fakes and hand-built messages), sent back verbatim
    only to the same API, endpoint and model; `reasoning_text` the model's readable reasoning,
    for display only: never sent to a provider as text, never part of the answer. `model` is
    the spec of the model that produced the reply ("openai:gpt-4.1-mini"; which model of a
    `Fallback` answered), set by the loop on every reply of a run and None on hand-made
    messages; it is not part of equality.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None
    reasoning: tuple[Reasoning, ...] = field(default=())
    _: KW_ONLY
    response_id: str | None = None
    native: Native | None = None
    reasoning_text: str = ""
    model: str | None = field(default=None, compare=False)
    type: ClassVar[str] = "assistant"

    def request_usage(self) -> Usage:
        """What the request that got this reply adds to a run's usage: one request with the
        reply's tokens and cost, or one request whose tokens were not reported."""
        usage = self.usage
        if usage is None:
            return _UNREPORTED_REQUEST
        return Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            requests=1,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=usage.cost_usd,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "text": self.text}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        if self.stop_reason is not None:
            out["stop_reason"] = self.stop_reason
        if self.reasoning:
            out["reasoning"] = [r.to_dict() for r in self.reasoning]
        if self.response_id is not None:
            out["response_id"] = self.response_id
        if self.native is not None:
            out["native"] = self.native.to_dict()
        if self.reasoning_text:
            out["reasoning_text"] = self.reasoning_text
        if self.model is not None:
            out["model"] = self.model
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AssistantMessage:
        usage = data.get("usage")
        native = data.get("native")
        return cls(
            text=data.get("text", ""),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls", ())),
            usage=Usage.from_dict(usage) if usage is not None else None,
            stop_reason=data.get("stop_reason"),
            reasoning=tuple(Reasoning.from_dict(r) for r in data.get("reasoning", ())),
            response_id=data.get("response_id"),
            native=Native.from_dict(native) if native is not None else None,
            reasoning_text=data.get("reasoning_text", ""),
            model=data.get("model"),
        )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The answer to one tool call, as the model reads it (already truncated).

    `is_error` marks results the model should treat as a failure to fix; `images` are extra
    parts for providers that accept them (text in `content` always describes them too).
    """

    call_id: str
    name: str
    content: str
    is_error: bool = False
    images: tuple[Image, ...] = ()
    type: ClassVar[str] = "tool_result"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "call_id": self.call_id,
            "name": self.name,
            "content": self.content,
            "is_error": self.is_error,
        }
        if self.images:
            out["images"] = [i.to_dict() for i in self.images]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        return cls(
            call_id=data["call_id"],
            name=data["name"],
            content=data["content"],
            is_error=bool(data.get("is_error", False)),
            images=tuple(Image.from_dict(i) for i in data.get("images", ())),
        )


@dataclass(frozen=True, slots=True)
class Summary:
    """A compaction entry: `text` stands for the `replaced` messages before the recent tail."""

    text: str
    replaced: int
    type: ClassVar[str] = "summary"

    @property
    def note(self) -> str:
        """The text the model reads in place of the replaced messages."""
        return f"[{self.replaced} earlier messages summarised]\n{self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text, "replaced": self.replaced}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Summary:
        return cls(text=data["text"], replaced=int(data["replaced"]))


Message: TypeAlias = UserMessage | AssistantMessage | ToolResult | Summary

_BY_TYPE: dict[str, Any] = {
    cls.type: cls for cls in (UserMessage, AssistantMessage, ToolResult, Summary)
}


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """Rebuilds any message from its `to_dict()` form; a ValueError names an unknown type."""
    kind = data.get("type")
    cls = _BY_TYPE.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"not a steadyloop message: unknown type {kind!r}")
    message: Message = cls.from_dict(data)
    return message


def _parse(text: str) -> dict[str, Any]:
    """Arguments text as a JSON object (`{}` for blank or `null`), or `ArgumentsError`."""
    text = text.strip()
    if not text or text == "null":
        return {}
    try:
        # `json.loads` without its layers around the decoder (the text has no whitespace left
        # at either end to skip): every call's arguments are read here.
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        end = -1
    if end != len(text):  # not one JSON value: `json.loads` words the complaint
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            preview = text if len(text) <= _RAW_PREVIEW else text[:_RAW_PREVIEW] + "..."
            raise ArgumentsError(texts.NOT_JSON.format(error=exc, received=preview)) from None
    if not isinstance(value, dict):
        kind, received = type(value).__name__, text[:_RAW_PREVIEW]
        raise ArgumentsError(texts.NOT_AN_OBJECT.format(type=kind, received=received))
    return value


def canonical_arguments(arguments: str | Mapping[str, Any]) -> str:
    """One text for equal arguments however they were sent (a key, not something to send): the
    JSON of `ToolCall.parsed_arguments()` with sorted keys; text that is not a JSON object stays
    as it is."""
    try:
        parsed = ToolCall("", "", arguments).parsed_arguments()
    except ArgumentsError:
        return str(arguments)  # only text can fail to parse
    return json.dumps(dict(parsed), sort_keys=True, default=str)
