"""A stand-in for the Gemini API and Vertex AI on 127.0.0.1, which the official `google-genai`
SDK talks to through its base URL.

It answers `models/M:generateContent` and `:streamGenerateContent?alt=sse` (Gemini API, key in
`x-goog-api-key`) and `projects/P/locations/L/publishers/google/models/M:...` (Vertex AI, a
bearer token) with scripted replies, after checking each request against Gemini's rules and
answering a broken one with Google's own 400 text:

- roles `user` and `model` only; no content without parts; no unknown request field (a tool's
  pydantic schema under `parameters` is refused as the API refuses it);
- a function-call turn right after a user turn or a function-response turn; after it, as many
  `functionResponse` parts as it has calls; a response turn only after a call turn; each
  `response` an object;
- for Gemini 3 models (`gemini-3*`), the first call of each model turn since the last plain
  user turn carries a thought signature; on every model, each signature sent is one this server
  issued for that very model, or Google's placeholder (`Corrupted thought signature.`).

Replies to a Gemini 3 model are signed as the API signs them: the first call of a reply, or
its last text part when it has no call; a streamed reply sends the signature of its text on a
final empty text part. Usage counts a quarter of the request's JSON as prompt tokens, and a
request longer than `context_limit` gets the API's context-window error.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from support.http import Handler, LocalServer

JSON = dict[str, Any]
PLACEHOLDER = b"skip_thought_signature_validator"
API_KEY = "gemini-test-key"
ROLE_TEXT = "Please use a valid role: user, model."
CALL_TURN_TEXT = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)
RESPONSE_TURN_TEXT = (
    "Please ensure that function response turn comes immediately after a function call turn."
)
COUNT_TEXT = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
CORRUPTED_TEXT = "Corrupted thought signature."
KEY_TEXT = "API key not valid. Please pass a valid API key."
FIELDS = {
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "safetySettings",
    "generationConfig",
    "cachedContent",
    "labels",
}
# What Gemini's OpenAPI `Schema` (a tool's `parameters`) has; anything else is refused there.
SCHEMA_FIELDS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
}
_PATH = re.compile(
    r"^/(?P<version>v1\w*)/(?:projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/"
    r"publishers/google/)?models/(?P<model>[^:/]+):(?P<method>generateContent|"
    r"streamGenerateContent)"
)


@dataclass
class Reply:
    """One scripted answer: a model turn of `parts` (JSON or SSE, as asked), an error
    (`status`, `body`), a 200 with other JSON (`raw`) or an HTML `page`.

    `broken` ends a stream after its first chunk, the connection dropped; `delay` seconds pass
    before the answer; for `drip` seconds before it the server sends keep-alive bytes.
    """

    parts: list[JSON] = field(default_factory=list)
    finish: str = "STOP"
    usage: JSON = field(default_factory=dict)
    candidate: JSON = field(default_factory=dict)  # more candidate fields (safetyRatings...)
    status: int = 200
    body: JSON | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: JSON | None = None
    page: str | None = None
    broken: bool = False
    delay: float = 0.0
    drip: float = 0.0


def text(value: str) -> JSON:
    return {"text": value}


def thought(value: str) -> JSON:
    return {"text": value, "thought": True}


def call(name: str, args: JSON | None = None, call_id: str | None = None) -> JSON:
    function: JSON = {"name": name, "args": args or {}}
    if call_id is not None:
        function["id"] = call_id
    return {"functionCall": function}


def reply(*parts: JSON, finish: str = "STOP", **options: Any) -> Reply:
    return Reply(parts=list(parts), finish=finish, **options)


def error(
    code: int, status: str, message: str, details: Sequence[JSON] = (), **options: Any
) -> Reply:
    body = {"error": {"code": code, "message": message, "status": status}}
    if details:
        body["error"]["details"] = list(details)
    return Reply(status=code, body=body, **options)


def rate_limited(retry_delay: str | None = None, headers: Mapping[str, str] = {}) -> Reply:
    """429 RESOURCE_EXHAUSTED as the API sends it, with a RetryInfo detail when asked."""
    details = []
    if retry_delay is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
        )
    message = "You exceeded your current quota, please check your plan and billing details."
    return error(429, "RESOURCE_EXHAUSTED", message, details, headers=dict(headers))


def unavailable(headers: Mapping[str, str] = {}) -> Reply:
    message = "The model is overloaded. Please try again later."
    return error(503, "UNAVAILABLE", message, headers=dict(headers))


def key_rejected() -> Reply:
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
    }
    return error(400, "INVALID_ARGUMENT", KEY_TEXT, [info])


def invalid(message: str) -> Reply:
    return error(400, "INVALID_ARGUMENT", message)


# -- the rules -----------------------------------------------------------------------------


def decoded(signature: object) -> bytes | None:
    """A signature's bytes (base64 in either alphabet, as proto JSON reads it)."""
    if not isinstance(signature, str):
        return None
    text_ = signature.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text_ + "=" * (-len(text_) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def is_gemini_3(model: str) -> bool:
    return model.startswith("gemini-3")


def validate(body: Mapping[str, Any], model: str, issued: Mapping[str, set[bytes]]) -> str | None:
    """Google's message for the first rule `body` breaks, or None."""
    for check in (_check_fields, _check_tools, _check_contents, _check_turns):
        problem = check(body)
        if problem is not None:
            return problem
    return _check_signatures(body, model, issued.get(model, set()))


def _check_fields(body: Mapping[str, Any]) -> str | None:
    for key in body:
        if key not in FIELDS:
            return f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'
    return None


def _check_tools(body: Mapping[str, Any]) -> str | None:
    for i, tool in enumerate(body.get("tools") or ()):
        for j, declaration in enumerate(tool.get("functionDeclarations") or ()):
            where = f"tools[{i}].function_declarations[{j}]"
            if not re.match(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$", str(declaration.get("name"))):
                return f"* GenerateContentRequest.{where}.name: Invalid function name."
            for key in _schema_keys(declaration.get("parameters") or {}):
                if key not in SCHEMA_FIELDS:
                    return (
                        f'Invalid JSON payload received. Unknown name "{key}" at '
                        f"'{where}.parameters': Cannot find field."
                    )
    return None


def _schema_keys(schema: Mapping[str, Any]) -> Iterator[str]:
    yield from schema
    for inner in (schema.get("properties") or {}).values():
        yield from _schema_keys(inner)


def _check_contents(body: Mapping[str, Any]) -> str | None:
    contents = body.get("contents") or []
    if not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    for i, content in enumerate(contents):
        if content.get("role") not in ("user", "model"):
            return ROLE_TEXT
        parts = content.get("parts") or []
        if not parts:
            return (
                f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
            )
        for j, part in enumerate(parts):
            where = f"contents[{i}].parts[{j}]"
            response = (part.get("functionResponse") or {}).get("response", {})
            if not isinstance(response, dict):
                return (
                    f"Invalid value at '{where}.function_response.response' "
                    f"(type.googleapis.com/google.protobuf.Struct), {json.dumps(response)}"
                )
            inline = part.get("inlineData")
            if inline is not None and (
                not inline.get("mimeType") or decoded(inline.get("data")) is None
            ):
                return f"* GenerateContentRequest.{where}.inline_data: invalid data or mime type"
    return None


def _calls(content: Mapping[str, Any]) -> list[JSON]:
    return [p for p in content.get("parts") or () if "functionCall" in p]


def _responses(content: Mapping[str, Any]) -> list[JSON]:
    return [p for p in content.get("parts") or () if "functionResponse" in p]


def _check_turns(body: Mapping[str, Any]) -> str | None:
    contents = body.get("contents") or []
    for i, content in enumerate(contents):
        previous = contents[i - 1] if i > 0 else None
        if _calls(content) and (previous is None or previous.get("role") != "user"):
            return CALL_TURN_TEXT
        if _responses(content) and (previous is None or not _calls(previous)):
            return RESPONSE_TURN_TEXT
        if _calls(content):
            following = contents[i + 1] if i + 1 < len(contents) else None
            answered = _responses(following) if following is not None else []
            if len(answered) != len(_calls(content)):
                return COUNT_TEXT
    return None


def _check_signatures(body: Mapping[str, Any], model: str, issued: set[bytes]) -> str | None:
    contents = body.get("contents") or []
    for content in contents:
        for part in content.get("parts") or ():
            if "thoughtSignature" in part:
                made = decoded(part["thoughtSignature"])
                if made != PLACEHOLDER and made not in issued:
                    return CORRUPTED_TEXT
    if not is_gemini_3(model):
        return None
    plain = [i for i, c in enumerate(contents) if c.get("role") == "user" and not _responses(c)]
    start = plain[-1] if plain else 0
    for position, content in enumerate(contents[start:], start=start):
        calls = _calls(content)
        if calls and "thoughtSignature" not in calls[0]:
            name = calls[0]["functionCall"].get("name")
            return (
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead "
                f"to degraded model performance. Additional data, function call `default_api:"
                f"{name}` , position {position + 1}. Please refer to "
                "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
            )
    return None


# -- the server ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One request as received: the model, whether streamed, the body and the credential
    (the API key, or the bearer token)."""

    path: str
    model: str
    stream: bool
    body: JSON
    credential: str


class FakeGemini:
    """The server: `url` for the SDK's base URL; `requests` as received; `rejections` the 400
    texts it answered; `issued` the signatures it made, by model."""

    def __init__(
        self, replies: Iterable[Reply] = (), *, context_limit: int = 1_000_000, vertex: bool = False
    ) -> None:
        self.replies = list(replies)
        self.requests: list[Request] = []
        self.rejections: list[str] = []
        self.issued: dict[str, set[bytes]] = {}
        self.context_limit = context_limit
        self.vertex = vertex
        self.api_key = API_KEY
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._made = 0
        self._server = LocalServer(_handler_for(self))

    @property
    def url(self) -> str:
        return self._server.url

    def __enter__(self) -> FakeGemini:
        self._server.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.closing.set()
        self._server.__exit__(*exc_info)

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def answer(self, request: Request) -> Reply:
        """A 400 for a broken request, else the next scripted reply, signed and counted."""
        with self._lock:
            self.requests.append(request)
            if not request.credential.startswith("Bearer ") and request.credential != self.api_key:
                return key_rejected()
            problem = validate(request.body, request.model, self.issued)
            if problem is not None:
                self.rejections.append(problem)
                return invalid(problem)
            prompt = len(json.dumps(request.body.get("contents"))) // 4
            if prompt > self.context_limit:
                return invalid(
                    f"The input token count ({prompt}) exceeds the maximum number of tokens "
                    f"allowed ({self.context_limit})."
                )
            if not self.replies:
                return invalid("stand-in: no scripted reply left")
            scripted = self.replies.pop(0)
            if scripted.status != 200 or scripted.raw is not None or scripted.page is not None:
                return scripted
            parts = [dict(part) for part in scripted.parts]
            if is_gemini_3(request.model):
                self._sign(parts, request.model)
            usage = {"promptTokenCount": prompt, "candidatesTokenCount": 7, **scripted.usage}
            usage["totalTokenCount"] = sum(
                usage.get(k, 0)
                for k in ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount")
            )
            return Reply(**{**vars(scripted), "parts": parts, "usage": usage})

    def _sign(self, parts: list[JSON], model: str) -> None:
        calls = [part for part in parts if "functionCall" in part]
        texts = [part for part in parts if "text" in part and not part.get("thought")]
        target = calls[0] if calls else texts[-1] if texts else None
        if target is None or "thoughtSignature" in target:
            return
        self._made += 1
        made = hashlib.sha512(f"{model}/{self._made}".encode()).digest()
        self.issued.setdefault(model, set()).add(made)
        target["thoughtSignature"] = base64.b64encode(made).decode()


def whole(scripted: Reply, model: str) -> JSON:
    """The `GenerateContentResponse` of a scripted reply."""
    candidate = {
        "content": {"role": "model", "parts": scripted.parts},
        "finishReason": scripted.finish,
        "index": 0,
        **scripted.candidate,
    }
    return {
        "candidates": [candidate],
        "usageMetadata": scripted.usage,
        "modelVersion": model,
        "responseId": "resp-fake",
    }


def chunks(scripted: Reply, model: str) -> list[JSON]:
    """The SSE chunks the API streams for it: text in halves, each call whole, the signature
    of a text on a final empty text part, the finish reason and usage on the last chunk."""
    pieces: list[JSON] = []
    for part in scripted.parts:
        if "text" in part:
            signature = part.get("thoughtSignature")
            body = {k: v for k, v in part.items() if k != "thoughtSignature"}
            middle = len(part["text"]) // 2
            for piece in (part["text"][:middle], part["text"][middle:]):
                if piece:
                    pieces.append({**body, "text": piece})
            if signature is not None:
                pieces.append({"text": "", "thoughtSignature": signature})
        else:
            pieces.append(part)
    out: list[JSON] = []
    for piece in pieces or [{"text": ""}]:
        content = {"role": "model", "parts": [piece]}
        out.append(
            {
                "candidates": [{"content": content, "index": 0}],
                "modelVersion": model,
                "responseId": "resp-fake",
            }
        )
    last = out[-1]["candidates"][0]
    last.update({"finishReason": scripted.finish, **scripted.candidate})
    out[-1]["usageMetadata"] = scripted.usage
    return out


def _handler_for(fake: FakeGemini) -> type[Handler]:
    class GeminiHandler(Handler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.read_json()
            match = _PATH.match(self.path)
            if match is None:
                self.send_json(
                    404,
                    {
                        "error": {
                            "code": 404,
                            "message": f"no such path {self.path}",
                            "status": "NOT_FOUND",
                        }
                    },
                )
                return
            credential = (
                self.headers.get("x-goog-api-key") or self.headers.get("authorization") or ""
            )
            stream = match["method"] == "streamGenerateContent"
            request = Request(self.path, match["model"], stream, body, credential)
            scripted = fake.answer(request)
            if fake.closing.wait(scripted.delay):
                return
            if scripted.page is not None:
                self.send_body(200, scripted.page.encode(), "text/html; charset=utf-8")
            elif scripted.status != 200:
                self.send_json(scripted.status, scripted.body, scripted.headers)
            elif scripted.raw is not None:
                self.send_json(200, scripted.raw, scripted.headers)
            elif stream:
                self._sse(chunks(scripted, request.model), scripted)
            elif scripted.drip:
                self._chunked("application/json")
                self._drip(scripted.drip, b" ")
                self._chunk(json.dumps(whole(scripted, request.model)).encode())
                self._chunk(b"")
            else:
                self.send_json(200, whole(scripted, request.model), scripted.headers)

        def _sse(self, events: list[JSON], scripted: Reply) -> None:
            self._chunked("text/event-stream")
            self._drip(scripted.drip, b"\n")
            for event in events[:1] if scripted.broken else events:
                self._chunk(f"data: {json.dumps(event)}\r\n\r\n".encode())
            if not scripted.broken:
                self._chunk(b"")
            self.close_connection = True

        def _chunked(self, kind: str) -> None:
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()

        def _drip(self, seconds: float, keep_alive: bytes) -> None:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not fake.closing.wait(0.05):
                self._chunk(keep_alive)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    return GeminiHandler


def model_for(fake: FakeGemini, model: str = "gemini-3-flash-preview", **options: Any) -> Any:
    """A `GoogleModel` whose SDK client talks to `fake` with its key."""
    from steadyloop.models.google import GoogleModel

    options.setdefault("api_key", fake.api_key)
    options.setdefault("base_url", fake.url)
    return GoogleModel(model, **options)
