"""OpenAI Chat Completions (`openai:MODEL`), also the base of every OpenAI-compatible server.

Translation, in both directions, and nothing else: the canonical history goes through
`prepare_history` (ids at most 40 characters, every call answered) and `ToolNames`, then becomes
Chat messages; a reply (JSON or SSE chunks, as plain dicts) becomes an `AssistantMessage`. The
shapes sent are the ones every server tested accepts: an assistant message with tool calls has
`content: ""` (llama.cpp rejects null or a missing content, F42), `tool_calls` is never an empty
array (F21), `tools` and `parallel_tool_calls` are left out when there are no tools (F39), tool
results are one `role: tool` message each with string content; a prompt's images and documents
are `image_url` and `file` parts of its user message (text documents as text). Requests go
through the official
SDK's `post` with raw dicts, so the parsers below see exactly what the server sent (arguments as
an object, F15; empty ids, F23) and the cassette tests exercise the same code.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from steadyloop.errors import ConfigError, ModelError
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
from steadyloop.models.base import Model, ModelRequest, StreamPart
from steadyloop.models.deadline import Deadline
from steadyloop.models.openai_errors import KeyHint, error_from_body, openai_errors
from steadyloop.models.wire import (
    IdRules,
    MediaRules,
    ToolNames,
    document_text,
    own_settings,
    prepare_history,
    request_settings,
)
from steadyloop.secrets import Redactor, clean_key, secrets_kept, shown_location
from steadyloop.tools import ToolSpec

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "CHAT_IDS",
    "OPENAI_MEDIA",
    "ChatStreamParser",
    "OpenAIChatModel",
    "chat_body",
    "from_spec",
    "parse_chat_completion",
    "wire_arguments",
]

CHAT_IDS = IdRules(max_length=40)
OPENAI_MEDIA = MediaRules("openai")  # images (also by URL) and PDFs
INSTALL_HINT = "the OpenAI SDK is not installed: pip install 'steadyloop[openai]'"
NO_KEY_HINT = (
    "{env} is not set: export it, pass api_key=..., or use --model test "
    "(Agent('test')) to run offline"
)
# Request fields the adapter and the agent fill in, which settings may not replace.
CHAT_OWNED = frozenset({"model", "messages", "stream", "stream_options", "tools"})
OWNED_ADVICE = "name the model in the model spec; give the Agent instructions=... and tools=..."
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


class OpenAIModel(Model):
    """What both OpenAI adapters share: the SDK client, the key check, the request settings.

    Args:
        model: the provider's model name, e.g. "gpt-4.1-mini".
        base_url: the API root (default: `OPENAI_BASE_URL`, else api.openai.com). Errors show
            it without its password.
        api_key: the key (default: `OPENAI_API_KEY`), less surrounding whitespace and line
            endings; missing, or with a character a header cannot carry, is a `ConfigError`
            right away. No error text ever quotes it.
        client: a ready `openai.AsyncOpenAI` to use instead of building one.
        max_retries: the SDK's own retries of 429/5xx/connection errors. 0 by default: the
            agent's loop retries the model call (`Agent(model_retries=...)`), and a second
            layer would multiply the requests (3 x 3 for one persistent 503).
        timeout: seconds one model call may take in all, streamed or not, so a server that
            keeps the connection busy with keep-alive comments is cut off too; running out is a
            retryable `ModelError`. The SDK keeps its own limits on connecting and on silence.
        parallel_tool_calls: sent only when set and the request has tools.
        settings: extra request fields (temperature, max_tokens, ...), sent as given; one
            the adapter fills in itself (`owned_settings`: model, messages, stream...) is a
            `ConfigError`.
        image_urls, pdfs: whether the server fetches image URLs and reads PDF files in a
            prompt (OpenAI's does; many compatible servers do not): a prompt with one it
            cannot take is a `ConfigError` before anything is sent.
        name: the spec string shown in logs (default "<provider>:<model>").
        key_env: the variable a rejected-key error tells the user to check (None: no key).
    """

    provider = "openai"
    owned_settings: frozenset[str] = CHAT_OWNED

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        max_retries: int = 0,
        timeout: float = 600.0,
        parallel_tool_calls: bool | None = None,
        settings: Mapping[str, Any] | None = None,
        name: str | None = None,
        key_env: str | None = "OPENAI_API_KEY",
        image_urls: bool = True,
        pdfs: bool = True,
    ) -> None:
        if not model:
            raise ConfigError(f"{self.provider}: a model name is required, e.g. gpt-4.1-mini")
        self.model = model
        self.name = name or f"{self.provider}:{model}"
        self.timeout = timeout
        self.parallel_tool_calls = parallel_tool_calls
        self.settings = own_settings(settings, self.owned_settings, OWNED_ADVICE)
        self.hint = KeyHint(key_env)
        self.media = MediaRules(self.name, image_urls=image_urls, pdfs=pdfs)
        self._owns_client = client is None
        self.client = (
            client
            if client is not None
            else self._make_client(base_url, api_key, max_retries, key_env)
        )
        self._redact = Redactor([self.client.api_key])
        self._shown_url = shown_location(str(self.client.base_url))

    @staticmethod
    def _make_client(
        base_url: str | None,
        api_key: str | None,
        max_retries: int,
        key_env: str | None,
    ) -> AsyncOpenAI:
        try:
            import openai
        except ModuleNotFoundError as exc:
            raise ConfigError(INSTALL_HINT) from exc
        key = _key(api_key, key_env)
        if not key:
            if key_env is not None:
                raise ConfigError(NO_KEY_HINT.format(env=key_env))
            key = "no-key"  # local servers ignore it, the SDK insists on one
        return openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=max_retries)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SDK exceptions mapped to steadyloop's, with no key or URL password in their text."""
        with secrets_kept(self._redact), openai_errors(self.name, self.hint, self._shown_url):
            yield

    async def _post(self, path: str, body: dict[str, Any]) -> Mapping[str, Any]:
        with self._errors():
            async with Deadline(self.timeout, self.name):
                data = await self.client.post(path, body=body, cast_to=object)
        if not isinstance(data, Mapping):
            raise ModelError(
                f"{self.name}: the reply is not a JSON object: {data!r:.200}; check base_url "
                "(a proxy or another server may have answered)",
                provider=self.name,
            )
        return data

    async def _events(self, path: str, body: dict[str, Any]) -> AsyncIterator[Mapping[str, Any]]:
        """The SSE data objects of a streamed request, with SDK errors mapped."""
        from openai import AsyncStream

        deadline = Deadline(self.timeout, self.name)
        with self._errors():
            async with deadline:
                stream = await self.client.post(
                    path, body=body, cast_to=object, stream=True, stream_cls=AsyncStream[object]
                )
            try:
                async for event in deadline.bound(stream):
                    if isinstance(event, Mapping):
                        yield event
            finally:
                await stream.close()

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.close()


def _key(api_key: str | None, key_env: str | None) -> str:
    """`api_key`, else the value of `key_env`, less surrounding whitespace ("" for none)."""
    if api_key:
        return clean_key(api_key, "api_key")
    value = os.environ.get(key_env) if key_env else None
    return clean_key(value, key_env) if value and key_env else ""


class OpenAIChatModel(OpenAIModel):
    """A model behind the Chat Completions API (OpenAI or any compatible server)."""

    async def request(self, request: ModelRequest) -> AssistantMessage:
        names = ToolNames(spec.name for spec in request.tools)
        body = self._body(request, names, stream=False)
        data = await self._post("/chat/completions", body)
        return parse_chat_completion(data, names, self.name, self.hint)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        names = ToolNames(spec.name for spec in request.tools)
        parser = ChatStreamParser(names, self.name, self.hint)
        async for chunk in self._events("/chat/completions", self._body(request, names, True)):
            for part in parser.feed(chunk):
                yield part
        yield parser.finish()

    def _body(self, request: ModelRequest, names: ToolNames, stream: bool) -> dict[str, Any]:
        body = chat_body(self.model, request, names, self.parallel_tool_calls, self.media)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(request_settings(self.settings, has_tools=bool(request.tools)))
        return body


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
) -> dict[str, Any]:
    """The Chat Completions request body for `request` (without stream settings)."""
    body: dict[str, Any] = {"model": model, "messages": chat_messages(request, names, media)}
    if request.tools:
        body["tools"] = [_tool(spec, names) for spec in request.tools]
        if parallel_tool_calls is not None:
            body["parallel_tool_calls"] = parallel_tool_calls
    return body


def chat_messages(
    request: ModelRequest, names: ToolNames, media: MediaRules = OPENAI_MEDIA
) -> list[dict[str, Any]]:
    """The canonical view as Chat messages: system prompt first, ids and names rewritten."""
    out: list[dict[str, Any]] = []
    if request.instructions:
        out.append({"role": "system", "content": request.instructions})
    for message in prepare_history(request.messages, CHAT_IDS):
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message, media)})
        elif isinstance(message, Summary):
            out.append({"role": "user", "content": message.note})
        elif isinstance(message, ToolResult):
            out.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
            )
        elif message.tool_calls:
            calls = [_call(call, names) for call in message.tool_calls]
            out.append({"role": "assistant", "content": message.text, "tool_calls": calls})
        elif message.text:
            out.append({"role": "assistant", "content": message.text})
    return out


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


def wire_arguments(arguments: str | Mapping[str, Any]) -> str:
    """Arguments as the JSON object text providers accept when a call is replayed.

    A mapping is serialised (F15); text that is not a JSON object (cut off, `""`, `null`) is
    sent as `{}`, since some servers reject the whole history over one bad call (F18); the
    error result the model got for that call already quotes what it sent.
    """
    if not isinstance(arguments, str):
        return json.dumps(dict(arguments), ensure_ascii=False)
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return "{}"
    return arguments if isinstance(parsed, dict) else "{}"


def _call(call: ToolCall, names: ToolNames) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": names.to_wire(call.name), "arguments": wire_arguments(call.arguments)},
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
    data: Mapping[str, Any], names: ToolNames, provider: str, hint: KeyHint
) -> AssistantMessage:
    """A `chat.completion` object as a canonical reply; an `error` object in it raises."""
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
    )


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
    __slots__ = ("arguments", "id", "name", "whole")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments = ""
        self.whole: Mapping[str, Any] | None = None

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


class ChatStreamParser:
    """Assembles `chat.completion.chunk` objects into deltas and, at the end, one reply.

    Handles the variants seen in the wild (F38): the id repeated in every chunk, a name-only
    first chunk, `arguments: null`, the whole call in one chunk, calls without an `index`, no
    `finish_reason`. An `error` object in a chunk raises (F36); a stream that ends with neither
    a `finish_reason` nor usage was cut off and raises a retryable `ModelError` (F37).
    """

    def __init__(self, names: ToolNames, provider: str, hint: KeyHint) -> None:
        self.names = names
        self.provider = provider
        self.hint = hint
        self.text: list[str] = []
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
        calls = tuple(
            ToolCall(
                call.id,
                self.names.from_wire(call.name),
                call.whole if call.whole is not None else call.arguments,
            )
            for _, call in sorted(self.calls.items())
        )
        return AssistantMessage(
            text="".join(self.text),
            tool_calls=calls,
            usage=self.usage,
            stop_reason=_stop_reason(self.finish_reason, bool(calls)),
            response_id=_response_id(self.last_chunk),
        )


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
