"""A local stand-in for the OpenAI API: `/v1/chat/completions` and `/v1/responses`, plain and
SSE, on 127.0.0.1 in a thread, for the official SDK to talk to through `base_url`.

It replays scripted replies in order, and before that it enforces the history rules the real
services enforce, answering a violation with the provider's real 400 body (texts from
`FAILURES.md`): F04 (unanswered `tool_call_id`s), F05 (orphan `role: tool`), F21
(`tool_calls: []`), F24 (id over 40 characters), F25 (tool-name pattern), F39
(`parallel_tool_calls` without tools), F42 (llama.cpp's 500 on `content: null`), F06/F08
(Responses pairing by `call_id`, duplicate or wrongly prefixed item ids), F07 (reasoning item
with no following item), the 401 for a wrong key and `context_length_exceeded` over a size limit.
Content parts of a prompt are checked against the documented shapes: Chat `text`, `image_url`
(user messages only, a URL or an image data URL) and `file`; Responses `input_text`,
`input_image` (with its required `detail`) and `input_file`, and `output_text`/`refusal` parts
in a replayed assistant message.

Reasoning, as the providers refuse a history that drops it: a Responses reply to a model that
may reason carries a reasoning item (encrypted only when the request asked for it); an id-only
reasoning item under `store: false` is the 404 `Item with id 'rs_…' not found. Items are not
persisted when store is set to false.`, encrypted content this server did not issue for that
model is refused, and asking a non-reasoning model (gpt-4*, gpt-3.5*, chatgpt-*, gpt-5-chat*)
for it is `400 Encrypted content is not supported with this model.` A `Dialect` makes the Chat
endpoint behave like a compatible server, per test: DeepSeek's `reasoning_content` (or Ollama's
`reasoning`) that must come back, Gemini 3's thought signatures on the first call of each reply,
Mistral's 9-character ids. An id this server made goes back whatever its length; OpenAI's
40-character limit applies to the others.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_NAME_PATTERN = "^[a-zA-Z0-9_-]+$"


Arguments = str | dict[str, Any]  # an object: what some compatible servers send (F15)


@dataclass(frozen=True)
class Reply:
    """A model reply, rendered as JSON or SSE for whichever API and mode was asked.

    `reasoning` is the model's readable reasoning: a reasoning item's summary on Responses (for
    a model that may reason), the dialect's reasoning field on Chat. `serial` is set by the
    server: the number of the request it answers, which names its reasoning item.
    """

    text: str = ""
    calls: Sequence[tuple[str, str, Arguments]] = ()  # (id, wire name, arguments)
    finish: str | None = None  # Chat finish_reason; "length" also marks Responses incomplete
    usage: tuple[int, int] | None = (20, 5)  # None: sent without usage, as some servers do
    reasoning: str = ""
    serial: int = 0


@dataclass(frozen=True)
class Dialect:
    """What a compatible server adds to OpenAI's Chat Completions rules.

    `reasoning_key`: replies carry their reasoning under this key ("reasoning_content" as
    DeepSeek, Kimi and GLM do, "reasoning" as Ollama does) and it must come back on each of
    them that made calls. `thought_signatures`: as Gemini 3, the first call of each reply has
    `extra_content.google.thought_signature`, which every reply of the current turn must send
    back unchanged. `nine_char_ids`: as Mistral, every call id is 9 letters and digits.
    """

    reasoning_key: str | None = None
    thought_signatures: bool = False
    nine_char_ids: bool = False


@dataclass(frozen=True)
class Fail:
    """An HTTP error with this status, body and headers."""

    status: int
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamError:
    """A 200 stream that sends some text, then an error object (F36).

    Chat: an `error` key in a chunk (OpenRouter). Responses: an `error` event, or with
    `failed=True` a `response.failed` event carrying the error.
    """

    error: Mapping[str, Any]
    text: str = "partial "
    failed: bool = False


@dataclass(frozen=True)
class Drop:
    """A 200 stream whose connection closes mid-way through a tool call (F37)."""


@dataclass(frozen=True)
class EmptyStream:
    """A 200 stream that ends at once, with no data: a server that failed on the request after
    sending its headers (llama-cpp-python, asked to stream `tool_choice: "auto"`)."""


@dataclass(frozen=True)
class Stall:
    """No answer for `seconds`, then `reply` (to a client that has usually given up)."""

    seconds: float
    reply: Reply = Reply(text="too late")


@dataclass(frozen=True)
class Drip:
    """A 200 whose body trickles for `seconds` before `reply`: SSE keep-alive comments to a
    stream (as OpenRouter sends them), leading whitespace to a plain request; a byte every
    `every` seconds, so no single read ever waits long."""

    seconds: float
    every: float = 0.05
    reply: Reply = Reply(text="too late")


@dataclass(frozen=True)
class Html:
    """A 200 with an HTML page instead of the API's reply (a proxy or a web server's)."""

    page: str = "<html><body><h1>Welcome to nginx!</h1></body></html>"


@dataclass(frozen=True)
class NoChoices:
    """A Chat Completions 200 whose `choices` list is empty, plain or streamed (usage only)."""


Scripted = Reply | Fail | StreamError | Drop | EmptyStream | Stall | Drip | Html | NoChoices


def error_body(message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


def rate_limit_body() -> dict[str, Any]:
    return {
        "error": {
            "message": "Rate limit reached for gpt-4o in organization org-test on tokens per min "
            "(TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms.",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }


class FakeOpenAI:
    """The server. Use as a context manager; `base_url` is what the SDK needs."""

    def __init__(
        self,
        *,
        api_key: str = "sk-test",
        max_input_chars: int | None = None,
        dialect: Dialect = Dialect(),
    ) -> None:
        self.api_key = api_key
        self.max_input_chars = max_input_chars
        self.dialect = dialect
        self.script: list[Scripted] = []
        self.requests: list[dict[str, Any]] = []  # every body received, in order
        self.rejected: list[str] = []  # the messages of history-rule rejections
        self.issued_calls: dict[str, Reply] = {}  # call id -> the reply that made it (Chat)
        self.issued_reasoning: dict[str, str | None] = {}  # rs id -> its encrypted content
        self._lock = threading.Lock()
        self.closing = threading.Event()  # ends stalls and drips when the test is over
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def queue(self, *items: Scripted) -> None:
        self.script.extend(items)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def next_item(self, path: str, body: Mapping[str, Any], auth: str) -> Scripted:
        """What to answer: a rule violation, else the next scripted item."""
        with self._lock:
            self.requests.append(dict(body))
            if auth != f"Bearer {self.api_key}":
                return _invalid_key(auth)
            chat = path.endswith("/chat/completions")
            check = self._check_chat if chat else self._check_responses
            problem = check(body)
            if problem is not None:
                self.rejected.append(json.dumps(problem.body))
                return problem
            if not self.script:
                return Fail(500, {"error": {"message": "no scripted reply left"}})
            item = self.script.pop(0)
            if isinstance(item, Reply):
                item = replace(item, serial=len(self.requests))
                self._issue(item, body, chat)
            return item

    def _issue(self, reply: Reply, body: Mapping[str, Any], chat: bool) -> None:
        """Remembers what a reply hands out that must come back: its call ids (and with them
        its reasoning and signature), its reasoning item and encrypted content."""
        if chat:
            self.issued_calls.update((call[0], reply) for call in reply.calls)
            return
        model = str(body.get("model"))
        if reply.reasoning and may_reason(model):
            self.issued_reasoning[_reasoning_id(reply)] = _encrypted(reply, body)

    def _check_chat(self, body: Mapping[str, Any]) -> Fail | None:
        problem = _check_chat(body, self.max_input_chars, set(self.issued_calls))
        return problem or self._check_dialect(body.get("messages") or [])

    def _check_dialect(self, messages: Sequence[Mapping[str, Any]]) -> Fail | None:
        dialect = self.dialect
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        turn_start = users[-1] if users else 0
        for i, message in enumerate(messages):
            ids = [m.get("tool_call_id") for m in [message] if m.get("role") == "tool"]
            calls = message.get("tool_calls") or [] if message.get("role") == "assistant" else []
            ids += [call.get("id") for call in calls]
            if dialect.nine_char_ids:
                for call_id in ids:
                    if not _NINE.match(str(call_id)):
                        return _bad(
                            f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, with a "
                            "length of 9."
                        )
            if not calls:
                continue
            made = self.issued_calls.get(calls[0].get("id"))
            key = dialect.reasoning_key
            if key and made is not None and made.reasoning and message.get(key) != made.reasoning:
                return _bad(
                    f"The {key} in the thinking mode must be passed back to the API.",
                    None,
                    f"messages[{i}].{key}",
                )
            if dialect.thought_signatures and i > turn_start:
                sent = ((calls[0].get("extra_content") or {}).get("google") or {}).get(
                    "thought_signature"
                )
                if sent is None or (made is not None and sent != _signature(calls[0]["id"])):
                    name = calls[0]["function"]["name"]
                    return _bad(
                        "Function call is missing a thought_signature in functionCall parts. "
                        "This is required for tools to work correctly, and missing "
                        "thought_signature may lead to degraded model performance. Additional "
                        f"data, function call `default_api:{name}` , position {i + 1}. Please "
                        "refer to https://ai.google.dev/gemini-api/docs/thought-signatures for "
                        "more details.",
                        None,
                        None,
                    )
        return None

    def _check_responses(self, body: Mapping[str, Any]) -> Fail | None:
        include = body.get("include") or []
        if "reasoning.encrypted_content" in include and not may_reason(str(body.get("model"))):
            return _bad("Encrypted content is not supported with this model.", None, "include")
        problem = _check_responses(body, self.max_input_chars)
        if problem is not None:
            return problem
        for item in body.get("input") or ():
            if item.get("type") != "reasoning":
                continue
            item_id = str(item.get("id"))
            encrypted = item.get("encrypted_content")
            if encrypted is None and body.get("store") is False:
                return Fail(
                    404,
                    error_body(
                        f"Item with id '{item_id}' not found. Items are not persisted when "
                        "`store` is set to false. Try again with `store` set to true, or "
                        "remove this item from your input.",
                        None,
                        "input",
                    ),
                )
            if encrypted is not None and (
                encrypted != self.issued_reasoning.get(item_id)
                or not encrypted.startswith(f"enc.{body.get('model')}.")
            ):
                return _bad(
                    f"The encrypted content for item {item_id} could not be verified. Reason: "
                    "Encrypted content could not be decrypted or parsed.",
                    "invalid_encrypted_content",
                    None,
                )
        return None


# Model families that do not reason (and refuse `include: ["reasoning.encrypted_content"]`).
_NON_REASONING = ("gpt-4", "gpt-3.5", "chatgpt-", "gpt-5-chat")
_NINE = re.compile(r"^[a-zA-Z0-9]{9}$")


def may_reason(model: str) -> bool:
    return not model.lower().startswith(_NON_REASONING)


def _reasoning_id(reply: Reply) -> str:
    return f"rs_{reply.serial:04d}"


def _encrypted(reply: Reply, body: Mapping[str, Any]) -> str | None:
    """The encrypted content of a reply's reasoning, bound to the model; None when the request
    did not ask for it."""
    if "reasoning.encrypted_content" not in (body.get("include") or ()):
        return None
    return f"enc.{body.get('model')}.{reply.serial}"


def _signature(call_id: str) -> str:
    return f"sig-{call_id}"


def _invalid_key(auth: str) -> Fail:
    key = auth.removeprefix("Bearer ")
    masked = key[:3] + "*" * 4 + key[-3:] if len(key) > 6 else "****"
    return Fail(
        401,
        error_body(
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_api_key",
        ),
    )


# -- the rules ----------------------------------------------------------------------------------


def _bad(message: str, code: str | None = None, param: str | None = None) -> Fail:
    return Fail(400, error_body(message, code, param))


def _context_error(body: Mapping[str, Any], key: str, limit: int | None) -> Fail | None:
    size = len(json.dumps(body.get(key)))
    if limit is None or size <= limit:
        return None
    if key == "messages":
        return _bad(
            f"This model's maximum context length is {limit // 4} tokens. However, your "
            f"messages resulted in {size // 4} tokens. Please reduce the length of the messages.",
            "context_length_exceeded",
            "messages",
        )
    return _bad(
        "Your input exceeds the context window of this model. Please adjust your input and "
        "try again.",
        "context_length_exceeded",
        "input",
    )


def _check_tools(body: Mapping[str, Any], chat: bool) -> Fail | None:
    tools = body.get("tools")
    if tools == []:
        return _bad(
            "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an "
            "empty array instead.",
            "empty_array",
            "tools",
        )
    for setting in ("parallel_tool_calls", "tool_choice"):
        if setting in body and not tools:
            return _bad(
                f"Invalid value for '{setting}': '{setting}' is only allowed when 'tools' "
                "are specified.",
                None,
                setting,
            )
    for i, tool in enumerate(tools or ()):
        name = tool["function"]["name"] if chat else tool["name"]
        where = f"tools[{i}].function.name" if chat else f"tools[{i}].name"
        if not _NAME.match(name):
            return _bad(
                f"Invalid '{where}': string does not match pattern. Expected a string that "
                f"matches the pattern '{_NAME_PATTERN}'.",
                "invalid_value",
                where,
            )
    return None


def _check_chat(body: Mapping[str, Any], limit: int | None, issued: set[str]) -> Fail | None:
    problem = _check_tools(body, chat=True)
    if problem is not None:
        return problem
    pending: list[str] = []
    answerable: set[str] = set()
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        role = message.get("role")
        problem = _check_chat_parts(message, i)
        if problem is not None:
            return problem
        if role == "tool":
            if message.get("tool_call_id") not in answerable:
                return _bad(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    None,
                    f"messages.[{i}].role",
                )
            if not isinstance(message.get("content"), str):
                return _bad(f"messages.{i}.content: Invalid input")
            pending = [p for p in pending if p != message["tool_call_id"]]
            continue
        if pending:
            return _unanswered(pending, i)
        answerable = set()
        if role == "assistant" and "tool_calls" in message:
            problem = _check_calls(message, i, issued)
            if problem is not None:
                return problem
            pending = [c["id"] for c in message["tool_calls"]]
            answerable = set(pending)
    if pending:
        return _unanswered(pending, len(messages))
    return _context_error(body, "messages", limit)


_IMAGE_URL = re.compile(r"^(https?://|data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$)")
_PDF_DATA = re.compile(r"^data:application/pdf;base64,[A-Za-z0-9+/=]+$")


def _check_chat_parts(message: Mapping[str, Any], i: int) -> Fail | None:
    content = message.get("content")
    if not isinstance(content, list):
        return None
    for j, part in enumerate(content):
        where = f"messages[{i}].content[{j}]"
        kind = part.get("type")
        if kind == "image_url" and message.get("role") != "user":
            return _bad(
                f"Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role "
                f"'user', but this message with role '{message.get('role')}' contains an image "
                "URL."
            )
        if kind == "text" and isinstance(part.get("text"), str):
            continue
        if kind == "image_url" and _IMAGE_URL.match(str((part.get("image_url") or {}).get("url"))):
            continue
        file = part.get("file") or {}
        if kind == "file" and _PDF_DATA.match(str(file.get("file_data"))) and file.get("filename"):
            continue
        return _bad(f"Invalid content part '{where}': {json.dumps(part)[:200]}", None, where)
    return None


def _check_input_parts(item: Mapping[str, Any], n: int) -> Fail | None:
    content = item.get("content")
    if not isinstance(content, list):
        return None
    for j, part in enumerate(content):
        where = f"input[{n}].content[{j}]"
        kind = part.get("type")
        if kind == "input_image" and "detail" not in part:
            return _bad(f"Missing required parameter: '{where}.detail'.", None, f"{where}.detail")
        if kind == "input_text" and isinstance(part.get("text"), str):
            continue
        assistant = item.get("role") == "assistant"
        if assistant and kind == "output_text" and isinstance(part.get("text"), str):
            continue
        if assistant and kind == "refusal" and isinstance(part.get("refusal"), str):
            continue
        if kind == "input_image" and _IMAGE_URL.match(str(part.get("image_url"))):
            continue
        if (
            kind == "input_file"
            and _PDF_DATA.match(str(part.get("file_data")))
            and part.get("filename")
        ):
            continue
        return _bad(f"Invalid content part '{where}': {json.dumps(part)[:200]}", None, where)
    return None


def _check_calls(message: Mapping[str, Any], i: int, issued: set[str]) -> Fail | None:
    calls = message["tool_calls"]
    if calls == []:
        return _bad(
            f"Invalid 'messages[{i}].tool_calls': empty array. Expected an array with minimum "
            "length 1, but got an empty array instead.",
            "empty_array",
            f"messages[{i}].tool_calls",
        )
    if message.get("content") is None:  # llama.cpp (F42); OpenAI itself accepts null
        return Fail(
            500,
            {
                "error": {
                    "message": "'dict object' has no attribute 'content'"
                    if "content" not in message
                    else "1 validation error: {'type': 'string_type', 'loc': ('body', "
                    f"'messages', {i}, 'ChatCompletionRequestAssistantMessage', 'content'), "
                    "'msg': 'Input should be a valid string', 'input': None}",
                    "type": "internal_server_error",
                    "param": None,
                    "code": None,
                }
            },
        )
    for j, call in enumerate(calls):
        if len(call["id"]) > 40 and call["id"] not in issued:
            return _bad(
                f"Invalid 'messages[{i}].tool_calls[{j}].id': string too long. Expected a string "
                f"with maximum length 40, but got a string with length {len(call['id'])} "
                "instead.",
                "string_above_max_length",
                f"messages[{i}].tool_calls[{j}].id",
            )
        if not isinstance(call["function"]["arguments"], str):
            return _bad(f"Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments'")
    return None


def _unanswered(pending: Sequence[str], i: int) -> Fail:
    return _bad(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(pending),
        None,
        f"messages.[{i}].role",
    )


def _check_responses(body: Mapping[str, Any], limit: int | None) -> Fail | None:
    problem = _check_tools(body, chat=False)
    if problem is not None:
        return problem
    if body.get("previous_response_id"):
        return _bad(f"Previous response with id '{body['previous_response_id']}' not found.")
    items = body.get("input") or []
    seen: set[str] = set()
    calls: list[str] = []
    answered: set[str] = set()
    for n in range(len(items)):
        problem = _check_item(items, n, seen, calls, answered)
        if problem is not None:
            return problem
    for call_id in calls:
        if call_id not in answered:
            return _bad(f"No tool output found for function call {call_id}.", None, "input")
    return _context_error(body, "input", limit)


def _check_item(
    items: Sequence[Mapping[str, Any]],
    n: int,
    seen: set[str],
    calls: list[str],
    answered: set[str],
) -> Fail | None:
    item = items[n]
    kind = item.get("type")
    item_id = item.get("id")
    problem = _check_input_parts(item, n)
    if problem is not None:
        return problem
    if item_id is not None:
        if item_id in seen:
            return _bad(
                f"Duplicate item found with id {item_id}. Remove duplicate items from your "
                "input and try again.",
                None,
                "input",
            )
        seen.add(item_id)
    if kind == "function_call":
        if item_id is not None and not str(item_id).startswith("fc"):
            return _bad(
                f"Invalid 'input[{n}].id': '{item_id}'. Expected an ID that begins with 'fc'."
            )
        if len(item["call_id"]) > 64:
            return _bad(
                f"Invalid 'input[{n}].call_id': string too long. Expected a string with maximum "
                f"length 64, but got a string with length {len(item['call_id'])} instead.",
                "string_above_max_length",
            )
        calls.append(item["call_id"])
    elif kind == "function_call_output":
        if item["call_id"] not in calls:
            return _bad(
                f"No tool call found for function call output with call_id {item['call_id']}.",
                None,
                "input",
            )
        answered.add(item["call_id"])
    elif kind == "reasoning":
        following = items[n + 1] if n + 1 < len(items) else None
        if following is None or not (
            following.get("type") == "function_call" or following.get("role") == "assistant"
        ):
            return _bad(
                f"Item '{item_id}' of type 'reasoning' was provided without its required "
                "following item.",
                None,
                "input",
            )
    return None


# -- rendering ----------------------------------------------------------------------------------


def _chat_json(reply: Reply, model: str, dialect: Dialect = Dialect()) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if dialect.reasoning_key and reply.reasoning:
        message[dialect.reasoning_key] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = [
            _chat_call(index, call, dialect) for index, call in enumerate(reply.calls)
        ]
    finish = reply.finish or ("tool_calls" if reply.calls else "stop")
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _chat_usage(reply),
    }


def _chat_call(index: int, call: tuple[str, str, Arguments], dialect: Dialect) -> dict[str, Any]:
    """A call as a whole message carries it, Gemini's signature on the first one."""
    call_id, name, args = call
    out: dict[str, Any] = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": args},
    }
    if dialect.thought_signatures and index == 0:  # only the first of a parallel set
        out["extra_content"] = {"google": {"thought_signature": _signature(call_id)}}
    return out


def _chat_usage(reply: Reply) -> dict[str, Any] | None:
    if reply.usage is None:
        return None
    prompt, completion = reply.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


def _chunk(delta: Mapping[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": dict(delta), "finish_reason": finish}
    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [choice], **extra}


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def _chat_chunks(reply: Reply, dialect: Dialect = Dialect()) -> Iterator[dict[str, Any]]:
    yield _chunk({"role": "assistant", "content": ""})
    if dialect.reasoning_key:
        for word in _words(reply.reasoning):
            yield _chunk({dialect.reasoning_key: word})
    for word in _words(reply.text):
        yield _chunk({"content": word})
    for index, call in enumerate(reply.calls):
        head = {"index": index, **_chat_call(index, call, dialect)}
        head["function"] = {"name": call[1], "arguments": ""}
        yield _chunk({"tool_calls": [head]})
        for piece in _pieces(call[2]):
            yield _chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield _chunk({}, reply.finish or ("tool_calls" if reply.calls else "stop"))
    if reply.usage is None:  # a server that ignores stream_options.include_usage
        return
    yield {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": _chat_usage(reply),
    }


def _pieces(args: Arguments) -> list[Arguments]:
    """Argument fragments as streamed: two halves of a text, an object whole."""
    if isinstance(args, dict):
        return [args]
    half = len(args) // 2
    return [args[:half], args[half:]]


def _response_json(
    reply: Reply, model: str, body: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if reply.reasoning and may_reason(model):
        output.append(_reasoning_item(reply, body or {}))
    if reply.text:
        output.append(_message_item(reply.text))
    output.extend(_call_item(n, call) for n, call in enumerate(reply.calls))
    incomplete = reply.finish == "length"
    return {
        "id": "resp_fake",
        "object": "response",
        "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None,
        "output": output,
        "usage": _response_usage(reply),
    }


def _response_usage(reply: Reply) -> dict[str, Any] | None:
    if reply.usage is None:
        return None
    prompt, completion = reply.usage
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "input_tokens_details": {"cached_tokens": 0},
    }


def _reasoning_item(reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": _reasoning_id(reply),
        "summary": [{"type": "summary_text", "text": reply.reasoning}],
        "encrypted_content": _encrypted(reply, body),
        "status": None,
    }


def _message_item(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_fake",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _call_item(n: int, call: tuple[str, str, Arguments]) -> dict[str, Any]:
    call_id, name, args = call
    return {
        "type": "function_call",
        "id": f"fc_fake{n}",
        "call_id": call_id,
        "name": name,
        "arguments": args,
        "status": "completed",
    }


def _response_events(
    reply: Reply, model: str, body: Mapping[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    final = _response_json(reply, model, body)
    yield {"type": "response.created", "response": {**final, "status": "in_progress", "output": []}}
    position = 0
    if reply.reasoning and may_reason(model):
        item = _reasoning_item(reply, body or {})
        yield {"type": "response.output_item.added", "output_index": 0, "item": item}
        yield {"type": "response.output_item.done", "output_index": 0, "item": item}
        position = 1
    if reply.text:
        item = _message_item(reply.text)
        yield {
            "type": "response.output_item.added",
            "output_index": position,
            "item": {**item, "content": []},
        }
        for word in _words(reply.text):
            yield {"type": "response.output_text.delta", "output_index": position, "delta": word}
        yield {"type": "response.output_item.done", "output_index": position, "item": item}
        position += 1
    for n, call in enumerate(reply.calls):
        item = _call_item(n, call)
        index = position + n
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "arguments": ""},
        }
        for piece in _pieces(call[2]):
            yield {
                "type": "response.function_call_arguments.delta",
                "output_index": index,
                "delta": piece,
            }
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield {"type": kind, "response": final}


def _sse_bytes(events: Sequence[Mapping[str, Any]], done: bool) -> bytes:
    lines = []
    for event in events:
        named = f"event: {event['type']}\n" if "type" in event else ""
        lines.append(f"{named}data: {json.dumps(event)}\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            auth = self.headers.get("Authorization") or ""
            item = server.next_item(self.path, body, auth)
            chat = self.path.endswith("/chat/completions")
            model = str(body.get("model"))
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gave up
                self._answer(item, body, chat, model)

        def _answer(self, item: Scripted, body: Mapping[str, Any], chat: bool, model: str) -> None:
            if isinstance(item, Stall):
                if not server.closing.wait(item.seconds):
                    self._answer(item.reply, body, chat, model)
            elif isinstance(item, Drip):
                self._drip(item, body, chat, model)
            elif isinstance(item, Html):
                self._send_bytes(200, item.page.encode(), "text/html; charset=utf-8")
            elif isinstance(item, NoChoices):
                self._no_choices(bool(body.get("stream")), model)
            elif isinstance(item, Fail):
                self._send(item.status, item.body, item.headers)
            elif isinstance(item, Drop):
                self._drop(chat)
            elif isinstance(item, EmptyStream):
                self._sse([], done=False)
            elif isinstance(item, StreamError):
                self._stream_error(item, chat)
            elif not body.get("stream"):
                dialect = server.dialect
                reply = (
                    _chat_json(item, model, dialect) if chat else _response_json(item, model, body)
                )
                self._send(200, reply)
            elif chat:
                self._sse([*_chat_chunks(item, server.dialect)], done=True)
            else:
                self._sse([*_response_events(item, model, body)], done=False)

        def _send(
            self, status: int, body: Mapping[str, Any], headers: Mapping[str, str] = {}
        ) -> None:
            self._send_bytes(status, json.dumps(body).encode(), "application/json", headers)

        def _send_bytes(
            self, status: int, data: bytes, kind: str, headers: Mapping[str, str] = {}
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _drip(self, item: Drip, body: Mapping[str, Any], chat: bool, model: str) -> None:
            stream = bool(body.get("stream"))
            if stream:
                lines = (
                    [*_chat_chunks(item.reply)] if chat else [*_response_events(item.reply, model)]
                )
                data = _sse_bytes(lines, done=chat)
                keep_alive, kind = b": keep-alive\n\n", "text/event-stream"
            else:
                reply = _chat_json(item.reply, model) if chat else _response_json(item.reply, model)
                data, keep_alive, kind = json.dumps(reply).encode(), b" ", "application/json"
            # HTTP/1.0 without a Content-Length: the body ends when the connection closes
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.end_headers()
            deadline = time.monotonic() + item.seconds
            while time.monotonic() < deadline and not server.closing.wait(item.every):
                self.wfile.write(keep_alive)
                self.wfile.flush()
            self.wfile.write(data)
            self.close_connection = True

        def _no_choices(self, stream: bool, model: str) -> None:
            usage = _chat_usage(Reply())
            bare: dict[str, Any] = {
                "id": "chatcmpl-fake",
                "model": model,
                "choices": [],
                "usage": usage,
            }
            if not stream:
                self._send(200, {**bare, "object": "chat.completion"})
            else:
                self._sse([{**bare, "object": "chat.completion.chunk"}], done=True)

        def _sse(
            self, events: Sequence[Mapping[str, Any]], done: bool, length: int | None = None
        ) -> None:
            data = _sse_bytes(events, done)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            # a Content-Length above what is sent makes the client see a cut connection
            self.send_header("Content-Length", str(length or len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def _drop(self, chat: bool) -> None:
            reply = Reply(calls=[("call_cut", "cut", '{"x": 1, "y": 2}')])
            events = [*_chat_chunks(reply)][:3] if chat else [*_response_events(reply, "m")][:3]
            self._sse(events, done=False, length=100_000)
            self.close_connection = True

        def _stream_error(self, item: StreamError, chat: bool) -> None:
            if chat:
                events = [*_chat_chunks(Reply(text=item.text))][:2]
                events.append(_chunk({"content": ""}, None, error=dict(item.error)))
                self._sse(events, done=True)
            else:
                events = [*_response_events(Reply(text=item.text), "m")][:3]
                if item.failed:
                    failed = {"id": "resp_fake", "status": "failed", "error": dict(item.error)}
                    events.append({"type": "response.failed", "response": failed})
                else:
                    error = {"type": "error", "sequence_number": len(events), "error": item.error}
                    events.append(error)
                self._sse(events, done=False)

    return Handler
