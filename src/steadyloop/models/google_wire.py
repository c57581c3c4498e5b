"""Gemini's wire format (`generateContent`), both ways, as plain JSON.

To the wire: the canonical history becomes `contents` of role `user` and `model` only. A reply
this very model made (`Native` of api "google", the same endpoint and model spec) goes back with
its parts as received — text, thought summaries and function calls, each `thoughtSignature`
byte for byte — and only its call arguments taken from the transcript. Every other reply
(another provider or model, a fake, a hand-built history) is rebuilt from its text and calls,
and the first call of each such turn carries Google's placeholder signature, which Gemini 3
accepts in place of one it made. The results of one reply are one user content of
`functionResponse` parts in call order (`{"output": ...}` or `{"error": ...}`), their images
after them. Tools are `functionDeclarations` with the tool's JSON Schema as
`parametersJsonSchema` (Gemini's `parameters` is an OpenAPI subset that refuses `$defs` or
`additionalProperties`).

From the wire: a reply (or the chunks of a streamed one) becomes an `AssistantMessage` whose
native content is the candidate's parts, kept whenever one carries a signature or is a thought.
Finish reasons that block an answer (SAFETY, RECITATION, ...) and a blocked prompt are
non-retryable `ModelError`s naming the reason; `MALFORMED_FUNCTION_CALL` is retryable.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from steadyloop.errors import ModelError
from steadyloop.events import TextDelta, ToolCallDelta
from steadyloop.media import Image
from steadyloop.messages import (
    ArgumentsError,
    AssistantMessage,
    Message,
    Native,
    Summary,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from steadyloop.models.wire import IdRules, MediaRules, ToolNames, document_text, prepare_history
from steadyloop.tools import ToolSpec

__all__ = [
    "API",
    "PLACEHOLDER_SIGNATURE",
    "Origin",
    "StreamAssembler",
    "build_body",
    "parse_reply",
    "parse_usage",
    "parsed_json",
]

JSON = dict[str, Any]
API = "google"
# Google's documented stand-in for a signature on a call the model did not make, as the SDK
# sends `Part(thought_signature=b"skip_thought_signature_validator")`: base64 of those bytes.
PLACEHOLDER_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode()
GEMINI_IDS = IdRules(pattern=re.compile(r"^[a-zA-Z0-9_.-]+$"), max_length=64, prefix="call_")
MEDIA = MediaRules("google")
START_TEXT = "(the conversation so far)"
EMPTY_USER_TEXT = "(no text)"
EMPTY_MODEL_TEXT = "(no reply)"
# Finish reasons after which there is no answer to use, and trying again will not help.
BLOCKED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
_STOP_REASONS = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens"}


@dataclass(frozen=True, slots=True)
class Origin:
    """The endpoint and model spec ("google:gemini-3-flash-preview") a reply comes from."""

    endpoint: str
    model: str

    def native(self, parts: list[JSON]) -> Native:
        return Native(API, self.endpoint, self.model, parts)

    def owns(self, message: AssistantMessage) -> bool:
        """Whether `message` is a reply of this very endpoint and model."""
        native = message.native
        return native is not None and native.is_own(API, self.endpoint, self.model)


# -- to the wire ---------------------------------------------------------------------------


def build_body(
    instructions: str | None,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    names: ToolNames,
    origin: Origin,
) -> JSON:
    """The request body without its settings: contents, system instruction, tools."""
    body: JSON = {"contents": _contents(messages, names, origin)}
    if instructions:
        body["systemInstruction"] = {"parts": [{"text": instructions}]}
    if tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t, names) for t in tools]}]
    return body


def _declaration(spec: ToolSpec, names: ToolNames) -> JSON:
    schema = {k: v for k, v in spec.parameters.items() if k != "$schema"}
    return {
        "name": names.to_wire(spec.name),
        "description": spec.description,
        "parametersJsonSchema": schema,
    }


class _Contents:
    """The contents being built, and the ids each call went with (None: it went without)."""

    def __init__(self) -> None:
        self.out: list[JSON] = []
        self.sent_ids: dict[str, str | None] = {}
        self.calls: list[str] = []  # the wire ids of the latest model turn's calls, in order

    def user(self, parts: list[JSON]) -> None:
        if self.out and self.out[-1]["role"] == "user":
            self.out[-1]["parts"].extend(parts)
        else:
            self.out.append({"role": "user", "parts": parts})

    def model(self, parts: list[JSON], calls: Sequence[ToolCall]) -> None:
        if not self.out:
            self.user([{"text": START_TEXT}])
        self.out.append({"role": "model", "parts": parts or [{"text": EMPTY_MODEL_TEXT}]})
        self.calls = [call.id for call in calls]

    def results(self, results: list[ToolResult], names: ToolNames) -> None:
        """One user content: every result's response in call order, then their images."""
        order = {call_id: index for index, call_id in enumerate(self.calls)}
        results.sort(key=lambda result: order.get(result.call_id, len(order)))
        parts = [self._response(result, names) for result in results]
        parts += [_image(image) for result in results for image in result.images]
        self.user(parts)

    def _response(self, result: ToolResult, names: ToolNames) -> JSON:
        key = "error" if result.is_error else "output"
        response: JSON = {"name": names.to_wire(result.name), "response": {key: result.content}}
        call_id = self.sent_ids.get(result.call_id, result.call_id)
        if call_id is not None:
            response["id"] = call_id
        return {"functionResponse": response}


def _contents(messages: Sequence[Message], names: ToolNames, origin: Origin) -> list[JSON]:
    built = _Contents()
    results: list[ToolResult] = []
    for message in prepare_history(messages, GEMINI_IDS, own=origin.owns):
        if isinstance(message, ToolResult):
            results.append(message)
            continue
        if results:
            built.results(results, names)
            results = []
        if isinstance(message, AssistantMessage):
            parts = _own_parts(message, built.sent_ids) if origin.owns(message) else None
            if parts is None:
                parts = _canonical_parts(message, names, built.sent_ids)
            built.model(parts, message.tool_calls)
        elif isinstance(message, Summary):
            built.user(_texts(message.note))
        else:
            built.user(_user_parts(message))
    if results:
        built.results(results, names)
    for content in built.out:
        if not content["parts"]:
            content["parts"].append({"text": EMPTY_USER_TEXT})
    return built.out


def _own_parts(message: AssistantMessage, sent_ids: dict[str, str | None]) -> list[JSON] | None:
    """The reply's parts as received, each call's arguments from the transcript; None when its
    calls no longer match them (then it goes as canonical parts)."""
    native = message.native
    received = native.content if native is not None else None
    if not isinstance(received, list):
        return None
    calls = list(message.tool_calls)
    parts: list[JSON] = []
    ids: dict[str, str | None] = {}
    for part in received:
        if not isinstance(part, Mapping):
            return None
        call = part.get("functionCall")
        if not isinstance(call, Mapping):
            parts.append(dict(part))
            continue
        if not calls or call.get("id") not in (None, calls[0].id):
            return None
        made = calls.pop(0)
        ids[made.id] = call.get("id")
        parts.append({**part, "functionCall": {**call, "args": _args(made.arguments)}})
    if calls:
        return None
    sent_ids.update(ids)
    return parts


def _canonical_parts(
    message: AssistantMessage, names: ToolNames, sent_ids: dict[str, str | None]
) -> list[JSON]:
    parts = _texts(message.text)
    for index, call in enumerate(message.tool_calls):
        function = {"name": names.to_wire(call.name), "args": _args(call.arguments), "id": call.id}
        part: JSON = {"functionCall": function}
        if index == 0:
            part["thoughtSignature"] = PLACEHOLDER_SIGNATURE
        parts.append(part)
        sent_ids[call.id] = call.id
    return parts


def _user_parts(message: UserMessage) -> list[JSON]:
    if not message.parts:
        return _texts(message.text)
    parts: list[JSON] = []
    for part in message.parts:
        if isinstance(part, str):
            parts.extend(_texts(part))
            continue
        MEDIA.check(part)
        if isinstance(part, Image):
            parts.append(_image(part))
        elif part.is_pdf:
            parts.append({"inlineData": {"mimeType": "application/pdf", "data": part.data}})
        else:
            parts.append({"text": document_text(part)})
    return parts


def _image(image: Image) -> JSON:
    if image.url is not None:
        return {"fileData": {"fileUri": image.url, "mimeType": image.media_type}}
    return {"inlineData": {"mimeType": image.media_type, "data": image.data}}


def _texts(text: str) -> list[JSON]:
    return [{"text": text}] if text else []


def _args(arguments: str | Mapping[str, Any]) -> JSON:
    """The call's arguments as an object; text that is not a JSON object becomes {}."""
    try:
        return dict(ToolCall("", "", arguments).parsed_arguments())
    except ArgumentsError:
        return {}


# -- from the wire -------------------------------------------------------------------------


def parse_reply(data: Mapping[str, Any], names: ToolNames, origin: Origin) -> AssistantMessage:
    """A `GenerateContentResponse` as a canonical reply; raises `ModelError` for a blocked
    prompt or answer, a malformed call (retryable), or JSON that is not a reply."""
    candidates = data.get("candidates")
    if not candidates:
        raise _no_candidate(data, origin.model)
    candidate = candidates[0]
    finish = candidate.get("finishReason")
    _check_finish(finish, candidate, origin.model)
    parts = [dict(p) for p in (candidate.get("content") or {}).get("parts") or ()]
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    for part in parts:
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            name = names.from_wire(str(call.get("name") or ""))
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            calls.append(ToolCall(str(call.get("id") or ""), name, arguments))
        elif part.get("thought"):
            if part.get("text"):
                thoughts.append(str(part["text"]))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    keep = any(part.get("thought") or part.get("thoughtSignature") for part in parts)
    reason = _STOP_REASONS.get(str(finish), str(finish).lower()) if finish else None
    if calls and reason in (None, "end_turn"):
        reason = "tool_use"
    return AssistantMessage(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=parse_usage(data.get("usageMetadata")),
        stop_reason=reason or "end_turn",
        response_id=str(data["responseId"]) if data.get("responseId") else None,
        native=origin.native(parts) if keep else None,
        reasoning_text="\n\n".join(thoughts),
    )


def _no_candidate(data: Mapping[str, Any], model: str) -> ModelError:
    feedback = data.get("promptFeedback")
    if isinstance(feedback, Mapping) and feedback.get("blockReason"):
        reason = feedback["blockReason"]
        return ModelError(
            f"{model}: Gemini blocked the prompt ({reason}{_categories(feedback)}); change "
            "the prompt or the safety_settings",
            provider=model,
        )
    if "candidates" in data or "usageMetadata" in data:
        return ModelError(f"{model}: the reply has no candidates", retryable=True, provider=model)
    return ModelError(
        f"{model}: the reply is not a Gemini reply: {json.dumps(data)[:300]}; check the base "
        "URL (a proxy or another server may have answered)",
        provider=model,
    )


def _check_finish(finish: object, candidate: Mapping[str, Any], model: str) -> None:
    if finish in BLOCKED:
        raise ModelError(
            f"{model}: Gemini stopped the answer ({finish}{_categories(candidate)}); there is "
            "no answer to use: change the prompt or the safety_settings",
            provider=model,
        )
    if finish == "MALFORMED_FUNCTION_CALL":
        message = candidate.get("finishMessage") or "the model produced a malformed call"
        raise ModelError(
            f"{model}: MALFORMED_FUNCTION_CALL: {message}", retryable=True, provider=model
        )


def _categories(holder: Mapping[str, Any]) -> str:
    """`: CATEGORY, ...` for the blocked safety ratings, or nothing."""
    ratings = holder.get("safetyRatings") or ()
    blocked = [
        str(r.get("category")) for r in ratings if isinstance(r, Mapping) and r.get("blocked")
    ]
    return f": {', '.join(blocked)}" if blocked else ""


def parse_usage(data: object) -> Usage | None:
    """Thinking is billed as output; tool-use prompt tokens are input; cached ones a part."""
    if not isinstance(data, Mapping):
        return None

    def count(key: str) -> int:
        return int(data.get(key) or 0)

    return Usage(
        input_tokens=count("promptTokenCount") + count("toolUsePromptTokenCount"),
        output_tokens=count("candidatesTokenCount") + count("thoughtsTokenCount"),
        cache_read_tokens=count("cachedContentTokenCount"),
    )


class StreamAssembler:
    """Builds the reply from the chunks of `streamGenerateContent`, returning each chunk's
    deltas. Text pieces join into one part per run of text (thought or not); a signature that
    comes on a later chunk, also on an empty text part, joins the part it follows, so the kept
    parts equal what a plain request returns. Gemini sends each call whole."""

    def __init__(self, names: ToolNames, origin: Origin) -> None:
        self._names = names
        self._origin = origin
        self._parts: list[JSON] = []
        self._calls = 0
        self._last: JSON = {}
        self._usage: object = None
        self._response_id: object = None
        self.finished = False

    def feed(self, chunk: Mapping[str, Any]) -> list[TextDelta | ToolCallDelta]:
        if chunk.get("usageMetadata"):
            self._usage = chunk["usageMetadata"]
        self._response_id = chunk.get("responseId") or self._response_id
        candidates = chunk.get("candidates")
        if not candidates:
            reply_like = any(
                key in chunk for key in ("usageMetadata", "responseId", "modelVersion")
            )
            if chunk.get("promptFeedback") or not reply_like:
                raise _no_candidate(chunk, self._origin.model)
            return []
        candidate = candidates[0]
        self._last = {k: v for k, v in candidate.items() if k != "content"}
        deltas: list[TextDelta | ToolCallDelta] = []
        for part in (candidate.get("content") or {}).get("parts") or ():
            deltas.extend(self._add(dict(part)))
        if candidate.get("finishReason"):
            self.finished = True
        return deltas

    def _add(self, part: JSON) -> list[TextDelta | ToolCallDelta]:
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            self._parts.append(part)
            index, self._calls = self._calls, self._calls + 1
            name = self._names.from_wire(str(call.get("name") or ""))
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            return [ToolCallDelta(index, call.get("id") or None, name, arguments)]
        if not isinstance(part.get("text"), str):
            self._parts.append(part)
            return []
        self._join(part)
        return [TextDelta(part["text"])] if part["text"] and not part.get("thought") else []

    def _join(self, part: JSON) -> None:
        last = self._parts[-1] if self._parts else None
        same = (
            last is not None
            and isinstance(last.get("text"), str)
            and bool(last.get("thought")) == bool(part.get("thought"))
            and not last.get("thoughtSignature")
        )
        if last is None or not same:
            self._parts.append(part)
            return
        last["text"] += part["text"]
        if part.get("thoughtSignature"):
            last["thoughtSignature"] = part["thoughtSignature"]

    def result(self) -> AssistantMessage:
        """The whole reply; a stream that ended without a finish reason is a retryable error."""
        if not self.finished:
            raise ModelError(
                f"{self._origin.model}: the stream ended before the reply was complete "
                "(no finishReason)",
                retryable=True,
                provider=self._origin.model,
            )
        candidate = {**self._last, "content": {"role": "model", "parts": self._parts}}
        data: JSON = {"candidates": [candidate]}
        if self._usage is not None:
            data["usageMetadata"] = self._usage
        if self._response_id:
            data["responseId"] = self._response_id
        return parse_reply(data, self._names, self._origin)


def parsed_json(text: str, model: str) -> Mapping[str, Any]:
    """A reply body as a JSON object; anything else (an HTML page from a proxy) is an error."""
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        data = None
    if not isinstance(data, Mapping):
        raise ModelError(
            f"{model}: the reply is not JSON: {text[:200]!r}; check the base URL (a proxy or "
            "another server may have answered)",
            provider=model,
        )
    return data
