"""OpenAI Responses API (`openai-responses:MODEL`): stateless replay of the whole history.

Every request carries the full input (`store: false`, never `previous_response_id`), so a run
can be resumed or compacted freely; a model that may reason is always asked for its reasoning
encrypted (`include: ["reasoning.encrypted_content"]`), the only form a stateless request can
send back. A reply of the same endpoint and model (its own) goes back as its output items in the
order received: reasoning items whole (each id once per request, F07/F08), `function_call` and
`message` items without the server's item ids (`fc_…`, `msg_…`: no duplicate or wrongly
prefixed id reaches the API, F08), paired with their `function_call_output` by `call_id` (F06).
A reasoning item without its encrypted content is never sent: under `store: false` its id alone
is a 404, so a reply holding one goes without its reasoning. Any other reply goes as its text
and calls. A prompt's images and documents are `input_image` (with `detail: auto`, which the
API requires) and `input_file` parts of its user message; a text document is `input_text`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

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
    IdRules,
    MediaRules,
    ToolNames,
    document_text,
    prepare_history,
    request_settings,
)
from steadyloop.tools import ToolSpec

__all__ = [
    "PROVIDER",
    "RESPONSES_IDS",
    "OpenAIResponsesModel",
    "ResponsesStreamParser",
    "from_spec",
    "may_reason",
    "parse_response",
    "responses_body",
    "responses_input",
]

PROVIDER = "openai-responses"
RESPONSES_IDS = IdRules(max_length=64)
_REASONING_KEYS = ("type", "id", "summary", "encrypted_content", "content")
# Model families that never reason: they answer a request for encrypted reasoning with
# `400 Encrypted content is not supported with this model.`
NON_REASONING = ("gpt-4", "gpt-3.5", "chatgpt-", "gpt-5-chat")
# Request fields the adapter and the agent fill in: a stateless request carries the whole
# input and never points at a stored response.
RESPONSES_OWNED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "previous_response_id",
        "store",
        "stream",
        "stream_options",
        "tools",
    }
)


class OpenAIResponsesModel(OpenAIModel):
    """A model behind the Responses API. Same arguments as `OpenAIChatModel`, plus:

    Args:
        reasoning: the `reasoning` request field (e.g. `{"effort": "low"}`) for reasoning
            models. Encrypted reasoning is requested from every model that may reason
            (`may_reason`), with or without it, so the reasoning can be sent back.
    """

    provider = PROVIDER
    api = PROVIDER
    owned_settings = RESPONSES_OWNED

    def __init__(
        self, model: str, *, reasoning: Mapping[str, Any] | None = None, **options: Any
    ) -> None:
        super().__init__(model, **options)
        self.reasoning = dict(reasoning) if reasoning is not None else None

    async def request(self, request: ModelRequest) -> AssistantMessage:
        names = ToolNames(spec.name for spec in request.tools)
        data = await self._post("/responses", self._body(request, names, stream=False))
        return parse_response(data, names, self.name, self.hint, self.origin)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        names = ToolNames(spec.name for spec in request.tools)
        parser = ResponsesStreamParser(names, self.name, self.hint, self.origin)
        async for event in self._events("/responses", self._body(request, names, stream=True)):
            for part in parser.feed(event):
                yield part
        yield parser.finish()

    def _body(self, request: ModelRequest, names: ToolNames, stream: bool) -> dict[str, Any]:
        body = responses_body(
            self.model, request, names, self.parallel_tool_calls, self.media, self.origin
        )
        if self.reasoning is not None:
            body["reasoning"] = self.reasoning
        if may_reason(self.model):
            body["include"] = ["reasoning.encrypted_content"]
        if request.cache_key is not None:
            body["prompt_cache_key"] = request.cache_key
        if stream:
            body["stream"] = True
        body.update(request_settings(self.settings, has_tools=bool(request.tools)))
        return body


def from_spec(name: str, *, settings: Mapping[str, Any] | None = None) -> OpenAIResponsesModel:
    """`openai-responses:MODEL`, with `OPENAI_API_KEY` / `OPENAI_BASE_URL`."""
    return OpenAIResponsesModel(name, settings=settings)


def may_reason(model: str) -> bool:
    """Whether `model` may reason: any model outside the known non-reasoning families
    (`NON_REASONING`), also behind a proxy's `vendor/` prefix."""
    return not model.rsplit("/", 1)[-1].lower().startswith(NON_REASONING)


# -- to the wire ---------------------------------------------------------------------------------


def responses_body(
    model: str,
    request: ModelRequest,
    names: ToolNames,
    parallel_tool_calls: bool | None = None,
    media: MediaRules = OPENAI_MEDIA,
    origin: Origin | None = None,
) -> dict[str, Any]:
    """The Responses request body for `request` (stateless: `store` false, full input); replies
    of `origin` go back as their output items."""
    body: dict[str, Any] = {
        "model": model,
        "input": responses_input(request, names, media, origin),
        "store": False,
    }
    if request.instructions:
        body["instructions"] = request.instructions
    if request.tools:
        body["tools"] = [_tool(spec, names) for spec in request.tools]
        if parallel_tool_calls is not None:
            body["parallel_tool_calls"] = parallel_tool_calls
    return body


def responses_input(
    request: ModelRequest,
    names: ToolNames,
    media: MediaRules = OPENAI_MEDIA,
    origin: Origin | None = None,
) -> list[dict[str, Any]]:
    """The canonical view as Responses input items; a reply of `origin` as its own items."""
    own = origin.owns if origin is not None else None
    items: list[dict[str, Any]] = []
    replayed: set[str] = set()
    for message in prepare_history(request.messages, RESPONSES_IDS, own):
        if isinstance(message, UserMessage):
            items.append({"role": "user", "content": _user_content(message, media)})
        elif isinstance(message, Summary):
            items.append({"role": "user", "content": message.note})
        elif isinstance(message, ToolResult):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.call_id,
                    "output": message.content,
                }
            )
        elif own is not None and own(message) and message.native is not None:
            items.extend(_own_items(message, message.native.content, names, replayed))
        else:
            items.extend(_canonical_items(message, names))
    return items


def _user_content(message: UserMessage, media: MediaRules) -> str | list[dict[str, Any]]:
    """The text, or the parts in order as `input_text`, `input_image` and `input_file`."""
    if not message.parts:
        return message.text
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, str):
            if part:
                content.append({"type": "input_text", "text": part})
            continue
        media.check(part)
        if isinstance(part, Image):
            content.append({"type": "input_image", "image_url": part.data_url, "detail": "auto"})
        elif part.is_pdf:
            name = part.name or "document.pdf"
            content.append({"type": "input_file", "filename": name, "file_data": part.data_url})
        else:
            content.append({"type": "input_text", "text": document_text(part)})
    return content


def _canonical_items(message: AssistantMessage, names: ToolNames) -> list[dict[str, Any]]:
    """Another origin's reply: its text, then its calls; no reasoning."""
    text = [{"role": "assistant", "content": message.text}] if message.text else []
    return [*text, *(_call_item(call, names) for call in message.tool_calls)]


def _own_items(
    message: AssistantMessage, output: Any, names: ToolNames, replayed: set[str]
) -> list[dict[str, Any]]:
    """An own reply's output items in the order received: reasoning whole (each id once, and
    none at all when one lacks its encrypted content), calls and messages without their
    server ids, calls with the ids and names the request uses (`message.tool_calls`, in order).
    """
    received = [item for item in output if isinstance(item, Mapping)]
    reasoning = [item for item in received if item.get("type") == "reasoning"]
    sendable = all(item.get("encrypted_content") for item in reasoning)
    calls = iter(message.tool_calls)
    items: list[dict[str, Any]] = []
    for item in received:
        kind = item.get("type")
        if kind == "reasoning" and sendable and item.get("id") not in replayed:
            replayed.add(str(item.get("id")))
            items.append({k: item[k] for k in _REASONING_KEYS if k in item})
        elif kind == "function_call":
            call = next(calls, None)
            if call is not None:
                items.append(_call_item(call, names))
        elif kind == "message":
            items.append(_message_item(item))
    while items and items[-1].get("type") == "reasoning":
        items.pop()  # a reasoning item must be followed by the item it preceded
    return items


def _call_item(call: ToolCall, names: ToolNames) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": names.to_wire(call.name),
        "arguments": wire_arguments(call),
    }


def _message_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An output message as input: its text and refusal parts, without ids or status."""
    parts: list[dict[str, Any]] = []
    for part in item.get("content") or ():
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "output_text":
            text = {"type": "output_text", "text": str(part.get("text") or "")}
            parts.append({**text, "annotations": list(part.get("annotations") or [])})
        elif part.get("type") == "refusal":
            parts.append({"type": "refusal", "refusal": str(part.get("refusal") or "")})
    return {"type": "message", "role": "assistant", "content": parts}


def _tool(spec: ToolSpec, names: ToolNames) -> dict[str, Any]:
    return {
        "type": "function",
        "name": names.to_wire(spec.name),
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "strict": False,
    }


# -- from the wire -------------------------------------------------------------------------------


def parse_response(
    data: Mapping[str, Any],
    names: ToolNames,
    provider: str,
    hint: KeyHint,
    origin: Origin | None = None,
) -> AssistantMessage:
    """A `response` object as a canonical reply, keeping its `output` as native content when
    `origin` is given; a failed response raises its error, and JSON that is not a response (no
    `output` list) a `ModelError`."""
    if data.get("error") or data.get("status") == "failed":
        raise error_from_body(data.get("error") or data, status=None, provider=provider, hint=hint)
    output = data.get("output")
    if not isinstance(output, list):
        raise ModelError(
            f"{provider}: the reply is not a Responses API response: {json.dumps(data)[:300]}",
            provider=provider,
        )
    return _reply(output, data, names, origin)


def _reply(
    output: Any, data: Mapping[str, Any], names: ToolNames, origin: Origin | None
) -> AssistantMessage:
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[str] = []
    for item in output:
        kind = item.get("type")
        if kind == "message":
            text.extend(_message_text(item))
        elif kind == "function_call":
            args = item.get("arguments")
            calls.append(
                ToolCall(
                    str(item.get("call_id") or ""),
                    names.from_wire(str(item.get("name") or "")),
                    dict(args) if isinstance(args, Mapping) else str(args or ""),
                )
            )
        elif kind == "reasoning":
            reasoning.extend(_readable(item))
    return AssistantMessage(
        text="".join(text),
        tool_calls=tuple(calls),
        usage=_usage(data.get("usage")),
        stop_reason=_stop_reason(data, bool(calls)),
        response_id=str(data["id"]) if data.get("id") else None,
        native=origin.native(output) if origin is not None else None,
        reasoning_text="\n\n".join(reasoning),
    )


def _readable(item: Mapping[str, Any]) -> list[str]:
    """A reasoning item's summaries and reasoning text parts (never its encrypted content)."""
    parts = [*(item.get("summary") or ()), *(item.get("content") or ())]
    texts = (part.get("text") for part in parts if isinstance(part, Mapping))
    return [text for text in texts if isinstance(text, str) and text]


def _message_text(item: Mapping[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    return [
        str(part.get("text") or part.get("refusal") or "")
        for part in content or ()
        if isinstance(part, Mapping)
    ]


def _stop_reason(data: Mapping[str, Any], has_calls: bool) -> str:
    status = data.get("status")
    if status == "incomplete":
        details = data.get("incomplete_details") or {}
        reason = str(details.get("reason") or "incomplete")
        return "max_tokens" if reason == "max_output_tokens" else reason
    if status in (None, "completed"):
        return "tool_use" if has_calls else "end_turn"
    return str(status)


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, Mapping):
        return None
    details = raw.get("input_tokens_details") or {}
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(details.get("cached_tokens") or 0),
    )


class ResponsesStreamParser:
    """Turns Responses SSE events into deltas and, from the final event, one reply.

    `response.completed` / `response.incomplete` carry the whole response, which is what the
    reply is built from (items finished earlier fill in when a server leaves `output` empty);
    `response.failed` and `error` events raise (a context error as `ContextWindowExceeded`);
    a stream that ends before a final event raises a retryable `ModelError` (F37).
    """

    def __init__(
        self, names: ToolNames, provider: str, hint: KeyHint, origin: Origin | None = None
    ) -> None:
        self.names = names
        self.provider = provider
        self.hint = hint
        self.origin = origin
        self.call_index: dict[int, int] = {}  # output_index -> tool-call index
        self.items: dict[int, Mapping[str, Any]] = {}
        self.final: AssistantMessage | None = None

    def feed(self, event: Mapping[str, Any]) -> list[TextDelta | ToolCallDelta]:
        kind = event.get("type")
        if kind == "response.output_text.delta" and event.get("delta"):
            return [TextDelta(str(event["delta"]))]
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") != "function_call":
                return []
            index = self.call_index.setdefault(_index(event), len(self.call_index))
            name = self.names.from_wire(str(item.get("name") or ""))
            return [
                ToolCallDelta(index, item.get("call_id"), name, str(item.get("arguments") or ""))
            ]
        if kind == "response.function_call_arguments.delta":
            known = self.call_index.get(_index(event))
            delta = event.get("delta")
            if known is not None and delta:
                text = json.dumps(delta) if isinstance(delta, Mapping) else str(delta)
                return [ToolCallDelta(known, None, None, text)]
        elif kind == "response.output_item.done":
            self.items[_index(event)] = event.get("item") or {}
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = event.get("response") or {}
            if not response.get("output"):  # some servers send the items only as events
                response = {**response, "output": [self.items[i] for i in sorted(self.items)]}
            self.final = parse_response(response, self.names, self.provider, self.hint, self.origin)
        elif kind == "error":
            body = event.get("error") or event
            raise error_from_body(body, status=None, provider=self.provider, hint=self.hint)
        return []

    def finish(self) -> AssistantMessage:
        if self.final is None:
            raise ModelError(
                f"{self.provider}: the stream ended before response.completed",
                retryable=True,
                provider=self.provider,
            )
        return self.final


def _index(event: Mapping[str, Any]) -> int:
    value = event.get("output_index")
    return value if isinstance(value, int) else -1
