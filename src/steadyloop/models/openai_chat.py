"""OpenAI Chat Completions (`openai:MODEL`), also the base of every OpenAI-compatible server.

Translation, in both directions, and nothing else: the canonical history goes through
`prepare_history` (foreign ids as 9 letters and digits, every call answered) and `ToolNames`,
then becomes Chat messages; a reply (JSON or SSE chunks, as plain dicts) becomes an
`AssistantMessage` that keeps the server's own message as its native content. The shapes sent
are the ones every server tested accepts: an assistant message with tool calls has
`content: ""` (llama.cpp rejects null or a missing content, F42), `tool_calls` is never an empty
array (F21), `tools` and `parallel_tool_calls` are left out when there are no tools (F39), tool
results are one `role: tool` message each with string content; a prompt's images and documents
are `image_url` and `file` parts of its user message (text documents as text).

A reply of the same endpoint and model (its own) goes back with what reasoning servers require
of it: its reasoning under the key it came in (`reasoning_content`: DeepSeek, Kimi, GLM, older
vLLM; `reasoning`: Ollama, newer vLLM), each call's `extra_content` (Gemini's thought
signature) and the message's own `extra_content`; its call ids as the server made them. Any
other reply goes as text and calls only. Requests go through the official SDK's `post` with raw
dicts, so the parsers below see exactly what the server sent (arguments as an object, F15;
empty ids, F23) and the cassette tests exercise the same code.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from steadyloop.errors import ModelError
from steadyloop.events import TextDelta, ToolCallDelta
from steadyloop.media import Image
from steadyloop.messages import (
    AssistantMessage,
    Summary,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from steadyloop.models.base import ModelRequest, StreamPart
from steadyloop.models.openai_base import (
    OPENAI_MEDIA,
    KeyHint,
    OpenAIModel,
    Origin,
    error_from_body,
    wire_arguments,
)
from steadyloop.models.wire import (
    CHAT_IDS,
    MediaRules,
    ToolNames,
    document_text,
    prepare_history,
    request_settings,
)
from steadyloop.tools import ToolSpec

__all__ = [
    "CHAT_IDS",
    "CHAT_OWNED",
    "ChatStreamParser",
    "OpenAIChatModel",
    "chat_body",
    "chat_messages",
    "from_spec",
    "parse_chat_completion",
]

# Request fields the adapter and the agent fill in, which settings may not replace.
CHAT_OWNED = frozenset({"model", "messages", "stream", "stream_options", "tools"})
# The keys servers put a reply's reasoning under, in the order they are read.
REASONING_KEYS = ("reasoning_content", "reasoning")
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


class OpenAIChatModel(OpenAIModel):
    """A model behind the Chat Completions API (OpenAI or any compatible server)."""

    owned_settings = CHAT_OWNED

    async def request(self, request: ModelRequest) -> AssistantMessage:
        names = ToolNames(spec.name for spec in request.tools)
        body = self._body(request, names, stream=False)
        data = await self._post("/chat/completions", body)
        return parse_chat_completion(data, names, self.name, self.hint, self.origin)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        names = ToolNames(spec.name for spec in request.tools)
        parser = ChatStreamParser(names, self.name, self.hint, self.origin)
        async for chunk in self._events("/chat/completions", self._body(request, names, True)):
            for part in parser.feed(chunk):
                yield part
        yield parser.finish()

    def _body(self, request: ModelRequest, names: ToolNames, stream: bool) -> dict[str, Any]:
        body = chat_body(
            self.model, request, names, self.parallel_tool_calls, self.media, self.origin
        )
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        key = chat_cache_key(request, str(self.client.base_url))
        if key is not None:
            body["prompt_cache_key"] = key
        body.update(request_settings(self.settings, has_tools=bool(request.tools)))
        return body


def chat_cache_key(request: ModelRequest, base_url: str) -> str | None:
    """The `prompt_cache_key` to send: a key of your own anywhere; the derived ("auto") one
    only to api.openai.com, as other servers may refuse a field they do not know (Mistral:
    422 `Extra inputs are not permitted`)."""
    auto = request.cache is not None and request.cache.key == "auto"
    if auto and urlsplit(base_url).hostname != "api.openai.com":
        return None
    return request.cache_key


def from_spec(name: str, *, settings: Mapping[str, Any] | None = None) -> OpenAIChatModel:
    """`openai:MODEL`: Chat Completions with `OPENAI_API_KEY` / `OPENAI_BASE_URL`."""
    return OpenAIChatModel(name, settings=settings)


# -- to the wire ---------------------------------------------------------------------------------


def chat_body(
    model: str,
    request: ModelRequest,
    names: ToolNames,
    parallel_tool_calls: bool | None = None,
    media: MediaRules = OPENAI_MEDIA,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """The Chat Completions request body for `request` (without stream settings); replies of
    `origin` go back with their native extras."""
    messages = chat_messages(request, names, media, origin)
    body: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [_tool(spec, names) for spec in request.tools]
        if parallel_tool_calls is not None:
            body["parallel_tool_calls"] = parallel_tool_calls
    return body


def chat_messages(
    request: ModelRequest,
    names: ToolNames,
    media: MediaRules = OPENAI_MEDIA,
    origin: Origin | None = None,
) -> list[dict[str, Any]]:
    """The canonical view as Chat messages: system prompt first, foreign ids and names
    rewritten; a reply of `origin` keeps its ids and gets back its native extras."""
    own = origin.owns if origin is not None else None
    out: list[dict[str, Any]] = []
    if request.instructions:
        out.append({"role": "system", "content": request.instructions})
    for message in prepare_history(request.messages, CHAT_IDS, own):
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message, media)})
        elif isinstance(message, Summary):
            out.append({"role": "user", "content": message.note})
        elif isinstance(message, ToolResult):
            out.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
            )
        elif message.tool_calls or message.text:
            reply: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                reply["tool_calls"] = [_call(call, names) for call in message.tool_calls]
            if own is not None and own(message) and message.native is not None:
                _add_native(reply, message.native.content)
            out.append(reply)
    return out


def _add_native(reply: dict[str, Any], native: Mapping[str, Any]) -> None:
    """Puts back what the server sent beside the text and calls and requires again: the
    reasoning under its own key, the message's and each call's `extra_content`."""
    for key in (*REASONING_KEYS, "extra_content"):
        if native.get(key):
            reply[key] = native[key]
    sent = native.get("tool_calls") or ()
    for call, received in zip(reply.get("tool_calls", ()), sent, strict=False):
        if isinstance(received, Mapping) and received.get("extra_content"):
            call["extra_content"] = received["extra_content"]


def _user_content(message: UserMessage, media: MediaRules) -> str | list[dict[str, Any]]:
    """The text, or the parts in order: text, `image_url` (a URL or a data URL) and `file`
    (a PDF as a data URL); a text document is text."""
    if not message.parts:
        return message.text
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, str):
            if part:
                content.append({"type": "text", "text": part})
            continue
        media.check(part)
        if isinstance(part, Image):
            content.append({"type": "image_url", "image_url": {"url": part.data_url}})
        elif part.is_pdf:
            file = {"filename": part.name or "document.pdf", "file_data": part.data_url}
            content.append({"type": "file", "file": file})
        else:
            content.append({"type": "text", "text": document_text(part)})
    return content


def _call(call: ToolCall, names: ToolNames) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": names.to_wire(call.name), "arguments": wire_arguments(call)},
    }


def _tool(spec: ToolSpec, names: ToolNames) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": names.to_wire(spec.name),
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }


# -- from the wire -------------------------------------------------------------------------------


def parse_chat_completion(
    data: Mapping[str, Any],
    names: ToolNames,
    provider: str,
    hint: KeyHint,
    origin: Origin | None = None,
) -> AssistantMessage:
    """A `chat.completion` object as a canonical reply, keeping `choices[0].message` as its
    native content when `origin` is given; an `error` object in it raises."""
    if data.get("error"):
        raise error_from_body(data, status=None, provider=provider, hint=hint)
    choices = data.get("choices") or []
    if not choices:
        raise _no_choices(provider, data)
    choice = choices[0]
    message = choice.get("message") or {}
    calls = tuple(
        ToolCall(
            str(raw.get("id") or ""),
            names.from_wire(str((raw.get("function") or {}).get("name") or "")),
            _arguments((raw.get("function") or {}).get("arguments")),
        )
        for raw in message.get("tool_calls") or ()
    )
    return AssistantMessage(
        text=_text(message.get("content")) or str(message.get("refusal") or ""),
        tool_calls=calls,
        usage=chat_usage(data.get("usage")),
        stop_reason=_stop_reason(choice.get("finish_reason"), bool(calls)),
        response_id=_response_id(data),
        native=origin.native(message) if origin is not None else None,
        reasoning_text=_reasoning_text(message),
    )


def _reasoning_text(message: Mapping[str, Any]) -> str:
    """The readable reasoning of a message, from the first key a server put it under."""
    for key in REASONING_KEYS:
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _no_choices(provider: str, data: Mapping[str, Any]) -> ModelError:
    """A reply without choices, whole or streamed: nothing to answer with, nor to retry."""
    return ModelError(
        f"{provider}: the reply has no choices: {json.dumps(data)[:300]}", provider=provider
    )


def chat_usage(raw: object) -> Usage | None:
    """Token counts of a Chat reply (cached tokens from either place servers put them)."""
    if not isinstance(raw, Mapping):
        return None
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=int(cached or raw.get("cached_tokens") or 0),
    )


def _stop_reason(finish: object, has_calls: bool) -> str:
    if finish is None:
        return "tool_use" if has_calls else "end_turn"
    reason = _STOP_REASONS.get(str(finish), str(finish))
    if has_calls and reason == "end_turn":
        return "tool_use"  # servers that say "stop" after tool calls
    return reason


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # a list of parts
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, Mapping))
    return ""


def _arguments(raw: object) -> str | Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    return raw if isinstance(raw, str) else ""


class _PartialCall:
    __slots__ = ("arguments", "extra", "id", "name", "whole")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments = ""
        self.whole: Mapping[str, Any] | None = None
        self.extra: Mapping[str, Any] | None = None

    def add_arguments(self, fragment: object) -> str:
        """Adds a fragment; returns the text to report as this chunk's delta."""
        if isinstance(fragment, Mapping):
            self.whole = dict(fragment)
            return json.dumps(self.whole)
        if not isinstance(fragment, str) or not fragment:
            return ""
        if self.arguments and fragment.startswith(self.arguments) and _is_json(self.arguments):
            # a server that re-sends the whole arguments in every chunk (llama.cpp, kimi)
            fragment = fragment[len(self.arguments) :]
        self.arguments += fragment
        return fragment

    def native(self) -> dict[str, Any]:
        """The call as a whole message would have carried it."""
        arguments = self.whole if self.whole is not None else self.arguments
        call: dict[str, Any] = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": arguments},
        }
        if self.extra is not None:
            call["extra_content"] = self.extra
        return call


class ChatStreamParser:
    """Assembles `chat.completion.chunk` objects into deltas and, at the end, one reply.

    Handles the variants seen in the wild (F38): the id repeated in every chunk, a name-only
    first chunk, `arguments: null`, the whole call in one chunk, calls without an `index`, no
    `finish_reason`. An `error` object in a chunk raises (F36); a stream that ends with neither
    a `finish_reason` nor usage was cut off and raises a retryable `ModelError` (F37). The
    reasoning (`reasoning_content` or `reasoning` deltas) and every `extra_content` are
    assembled into the reply's native message, as a whole message would have carried them.
    """

    def __init__(
        self, names: ToolNames, provider: str, hint: KeyHint, origin: Origin | None = None
    ) -> None:
        self.names = names
        self.provider = provider
        self.hint = hint
        self.origin = origin
        self.text: list[str] = []
        self.reasoning: dict[str, list[str]] = {}  # key it came under -> pieces
        self.extra: Mapping[str, Any] | None = None
        self.calls: dict[int, _PartialCall] = {}
        self.finish_reason: object = None
        self.usage: Usage | None = None
        self.last_chunk: Mapping[str, Any] = {}
        self.had_choices = False

    def feed(self, chunk: Mapping[str, Any]) -> list[TextDelta | ToolCallDelta]:
        if chunk.get("error"):
            raise error_from_body(chunk, status=None, provider=self.provider, hint=self.hint)
        if chunk.get("usage"):
            self.usage = chat_usage(chunk["usage"])
        self.last_chunk = chunk
        parts: list[TextDelta | ToolCallDelta] = []
        for choice in chunk.get("choices") or ():
            self.had_choices = True
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = _text(delta.get("content"))
            if text:
                self.text.append(text)
                parts.append(TextDelta(text))
            for key in REASONING_KEYS:
                if isinstance(delta.get(key), str) and delta[key]:
                    self.reasoning.setdefault(key, []).append(delta[key])
            if delta.get("extra_content"):
                self.extra = delta["extra_content"]
            for raw in delta.get("tool_calls") or ():
                parts.append(self._call_delta(raw))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return parts

    def _call_delta(self, raw: Mapping[str, Any]) -> ToolCallDelta:
        function = raw.get("function") or {}
        raw_id = raw.get("id") or None
        index = raw.get("index")
        if not isinstance(index, int):  # Gemini: parallel calls without an index
            last = max(self.calls, default=-1)
            known = last >= 0 and raw_id in (None, self.calls[last].id)
            index = last if known else last + 1
        call = self.calls.setdefault(index, _PartialCall())
        new_id = raw_id if raw_id and not call.id else None
        new_name = function.get("name") if function.get("name") and not call.name else None
        if new_id:
            call.id = str(new_id)
        if new_name:
            call.name = str(new_name)
        if raw.get("extra_content"):
            call.extra = raw["extra_content"]
        fragment = call.add_arguments(function.get("arguments"))
        name = self.names.from_wire(new_name) if new_name else None
        return ToolCallDelta(index, new_id, name, fragment)

    def finish(self) -> AssistantMessage:
        """The whole reply; raises when the stream was cut off before it was complete."""
        if not self.last_chunk:
            raise ModelError(
                f"{self.provider}: the server answered 200 but ended the stream before sending "
                "anything; it most likely failed on this request (see its log). Some servers "
                "cannot stream with some settings (llama-cpp-python's chatml-function-calling "
                'with tool_choice "auto"): try without streaming, or another tool_choice',
                retryable=True,
                provider=self.provider,
            )
        if self.finish_reason is None and self.usage is None:
            raise ModelError(
                f"{self.provider}: the stream ended before the reply was complete "
                "(no finish_reason)",
                retryable=True,
                provider=self.provider,
            )
        if not self.had_choices:
            raise _no_choices(self.provider, self.last_chunk)
        ordered = [call for _, call in sorted(self.calls.items())]
        calls = tuple(
            ToolCall(
                call.id,
                self.names.from_wire(call.name),
                call.whole if call.whole is not None else call.arguments,
            )
            for call in ordered
        )
        message = self._message(ordered)
        return AssistantMessage(
            text="".join(self.text),
            tool_calls=calls,
            usage=self.usage,
            stop_reason=_stop_reason(self.finish_reason, bool(calls)),
            response_id=_response_id(self.last_chunk),
            native=self.origin.native(message) if self.origin is not None else None,
            reasoning_text=_reasoning_text(message),
        )

    def _message(self, calls: Sequence[_PartialCall]) -> dict[str, Any]:
        """The streamed reply as `choices[0].message` of a whole one."""
        message: dict[str, Any] = {"role": "assistant"}
        if self.text:
            message["content"] = "".join(self.text)
        for key, pieces in self.reasoning.items():
            message[key] = "".join(pieces)
        if calls:
            message["tool_calls"] = [call.native() for call in calls]
        if self.extra is not None:
            message["extra_content"] = self.extra
        return message


def _response_id(data: Mapping[str, Any]) -> str | None:
    """The completion's id (every chunk of a stream repeats it), when the server sent one."""
    value = data.get("id")
    return str(value) if value else None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
