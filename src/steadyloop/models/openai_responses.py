"""OpenAI Responses API (`openai-responses:MODEL`): stateless replay of the whole history.

Every request carries the full input (`store: false`, never `previous_response_id`), so a run
can be resumed or compacted freely. Items sent: user messages, assistant text, `function_call`
items paired with their `function_call_output` by `call_id` (F06), and the reasoning items the
model produced, replayed once each, right before the calls they preceded (F07). Server item ids
(`fc_…`, `msg_…`) are never replayed, so no duplicate or wrongly prefixed id can reach the API
(F08); only reasoning items keep theirs, as the API requires. A prompt's images and documents
are `input_image` (with `detail: auto`, which the API requires) and `input_file` parts of its
user message; a text document is `input_text`.
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
    Reasoning,
    Summary,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from steadyloop.models.base import ModelRequest, StreamPart
from steadyloop.models.openai_chat import OPENAI_MEDIA, OpenAIModel, wire_arguments
from steadyloop.models.openai_errors import KeyHint, error_from_body
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
    "parse_response",
    "responses_body",
]

PROVIDER = "openai-responses"
RESPONSES_IDS = IdRules(max_length=64)
_REASONING_KEYS = ("type", "id", "summary", "encrypted_content", "content")
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
            models; when set, encrypted reasoning is requested so it can be replayed.
    """

    provider = PROVIDER
    owned_settings = RESPONSES_OWNED

    def __init__(
        self, model: str, *, reasoning: Mapping[str, Any] | None = None, **options: Any
    ) -> None:
        super().__init__(model, **options)
        self.reasoning = dict(reasoning) if reasoning is not None else None

    async def request(self, request: ModelRequest) -> AssistantMessage:
        names = ToolNames(spec.name for spec in request.tools)
        data = await self._post("/responses", self._body(request, names, stream=False))
        return parse_response(data, names, self.name, self.hint)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        names = ToolNames(spec.name for spec in request.tools)
        parser = ResponsesStreamParser(names, self.name, self.hint)
        async for event in self._events("/responses", self._body(request, names, stream=True)):
            for part in parser.feed(event):
                yield part
        yield parser.finish()

    def _body(self, request: ModelRequest, names: ToolNames, stream: bool) -> dict[str, Any]:
        body = responses_body(self.model, request, names, self.parallel_tool_calls, self.media)
        if self.reasoning is not None:
            body["reasoning"] = self.reasoning
            body["include"] = ["reasoning.encrypted_content"]
        if stream:
            body["stream"] = True
        body.update(request_settings(self.settings, has_tools=bool(request.tools)))
        return body


def from_spec(name: str, *, settings: Mapping[str, Any] | None = None) -> OpenAIResponsesModel:
    """`openai-responses:MODEL`, with `OPENAI_API_KEY` / `OPENAI_BASE_URL`."""
    return OpenAIResponsesModel(name, settings=settings)


# -- to the wire ---------------------------------------------------------------------------------


def responses_body(
    model: str,
    request: ModelRequest,
    names: ToolNames,
    parallel_tool_calls: bool | None = None,
    media: MediaRules = OPENAI_MEDIA,
) -> dict[str, Any]:
    """The Responses request body for `request` (stateless: `store` false, full input)."""
    body: dict[str, Any] = {
        "model": model,
        "input": responses_input(request, names, media),
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
    request: ModelRequest, names: ToolNames, media: MediaRules = OPENAI_MEDIA
) -> list[dict[str, Any]]:
    """The canonical view as Responses input items."""
    items: list[dict[str, Any]] = []
    replayed: set[str] = set()
    for message in prepare_history(request.messages, RESPONSES_IDS):
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
        else:
            items.extend(_assistant_items(message, names, replayed))
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


def _assistant_items(
    message: AssistantMessage, names: ToolNames, replayed: set[str]
) -> list[dict[str, Any]]:
    text = [{"role": "assistant", "content": message.text}] if message.text else []
    reasoning: list[dict[str, Any]] = []
    for item in message.reasoning:
        key = str(item.data.get("id", ""))
        if item.provider != PROVIDER or (key and key in replayed):
            continue
        replayed.add(key)
        reasoning.append(dict(item.data))
    calls = [
        {
            "type": "function_call",
            "call_id": call.id,
            "name": names.to_wire(call.name),
            "arguments": wire_arguments(call.arguments),
        }
        for call in message.tool_calls
    ]
    if calls:
        return [*text, *reasoning, *calls]
    # a reasoning item must be followed by an item: without text there is none to follow
    return [*reasoning, *text] if text else []


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
    data: Mapping[str, Any], names: ToolNames, provider: str, hint: KeyHint
) -> AssistantMessage:
    """A `response` object as a canonical reply; a failed response raises its error, and JSON
    that is not a response (no `output` list) a `ModelError`."""
    if data.get("error") or data.get("status") == "failed":
        raise error_from_body(data.get("error") or data, status=None, provider=provider, hint=hint)
    output = data.get("output")
    if not isinstance(output, list):
        raise ModelError(
            f"{provider}: the reply is not a Responses API response: {json.dumps(data)[:300]}",
            provider=provider,
        )
    return _reply(output, data, names)


def _reply(output: Any, data: Mapping[str, Any], names: ToolNames) -> AssistantMessage:
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[Reasoning] = []
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
            data_keys = {k: item[k] for k in _REASONING_KEYS if item.get(k) is not None}
            reasoning.append(Reasoning(PROVIDER, data_keys))
    return AssistantMessage(
        text="".join(text),
        tool_calls=tuple(calls),
        usage=_usage(data.get("usage")),
        stop_reason=_stop_reason(data, bool(calls)),
        reasoning=tuple(reasoning),
        response_id=str(data["id"]) if data.get("id") else None,
    )


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

    def __init__(self, names: ToolNames, provider: str, hint: KeyHint) -> None:
        self.names = names
        self.provider = provider
        self.hint = hint
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
            self.final = parse_response(response, self.names, self.provider, self.hint)
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
