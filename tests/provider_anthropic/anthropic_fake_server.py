"""A fake Anthropic Messages API on 127.0.0.1 that the official SDK talks to through base_url.

It replays scripted replies (as JSON, or as SSE when the request streams) and, before
anything else, checks each request against Anthropic's history rules, answering a broken one
with the real 400 body the API sends (texts from FAILURES.md and the recorded traffic):
F01/F03 calls answered right after, results first; F02 no orphan results; F13 `input` is an
object; F20 no empty messages or empty/whitespace-only text blocks; F22 unique `tool_use` ids;
F24 id pattern; F25 tool-name pattern; F40 thinking first when thinking is on; at most four
`cache_control` breakpoints, never a 1h one after a 5m one. Image and document blocks are
checked against the documented sources (base64 images of the four image types or a URL; PDFs
as base64, text as `text/plain`), in user turns only.

Like preserved thinking, each thinking block the server sent is bound to the request it
answered: sent back with thinking on, its turn must be the reply exactly as sent (no block
merged, moved or dropped but whitespace-only text) after exactly that prefix (system, tools and
the turns before it, cache marks aside), else `Invalid signature in thinking block`.

Usage is counted as the API does with prompt caching: every block costs tokens (a quarter of
its JSON length); a request reads from the cache the longest prefix that ended at a breakpoint
of an earlier request, and writes what its own last breakpoint adds to that.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from steadyloop.models.anthropic import AnthropicModel

JSON = dict[str, Any]
ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
THINKING_TEXT = (
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you "
    "include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "
    "Please consult our documentation at "
    "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"
)
BOUND_TEXT = "Invalid signature in thinking block. The block is bound to a different conversation."
UNKNOWN_SIGNATURE_TEXT = "Invalid `signature` in `thinking` block"
MODIFIED_TEXT = (
    "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
    "modified. These blocks must remain as they were in the original response."
)
MAX_BREAKPOINTS = 4
TTL_ORDER_TEXT = "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
THINKING_KINDS = ("thinking", "redacted_thinking")


@dataclass
class Reply:
    """One scripted answer: a `message` (JSON or SSE, as asked), an error, raw SSE `events`, or
    an HTML `page` with status 200 (a proxy answering instead of the API).

    `broken` ends the stream without its last chunk (the connection drops mid-reply);
    `delay` seconds pass before the answer starts; for `drip` seconds before it the server
    keeps the connection busy: `ping` events to a stream, leading whitespace to a plain request.
    """

    message: JSON | None = None
    status: int = 200
    body: JSON | None = None
    headers: dict[str, str] = field(default_factory=dict)
    events: list[JSON] | None = None
    broken: bool = False
    delay: float = 0.0
    page: str | None = None
    drip: float = 0.0


def text(value: str) -> JSON:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, arguments: JSON | None = None) -> JSON:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments or {}}


def thinking(thought: str, signature: str) -> JSON:
    return {"type": "thinking", "thinking": thought, "signature": signature}


def message(*blocks: JSON, stop_reason: str | None = None) -> Reply:
    """A scripted reply; the stop reason defaults to tool_use when there are calls. Its input
    token counts are the server's (see `FakeAnthropic`)."""
    calls = any(block["type"] == "tool_use" for block in blocks)
    stop = stop_reason or ("tool_use" if calls else "end_turn")
    return Reply(
        message={
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "claude-fake",
            "content": list(blocks),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 0,
                "output_tokens": 7,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        }
    )


def error(status: int, kind: str, text_: str, headers: Mapping[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": text_}, "request_id": "req_fake"}
    return Reply(status=status, body=body, headers=dict(headers or {}))


def stream_events(reply: JSON) -> list[JSON]:
    """The SSE events the API sends for `reply`, text and arguments split into fragments."""
    start = {**reply, "content": [], "stop_reason": None}
    events: list[JSON] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(reply["content"]):
        events.extend(_block_events(index, block))
        if index == 0:
            events.append({"type": "ping"})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": reply["usage"]["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _block_events(index: int, block: JSON) -> Iterator[JSON]:
    kind = block["type"]
    if kind == "text":
        yield _start(index, {"type": "text", "text": ""})
        for piece in _halves(block["text"]):
            yield _delta(index, {"type": "text_delta", "text": piece})
    elif kind == "tool_use":
        yield _start(index, {**block, "input": {}})
        arguments = json.dumps(block["input"]) if block["input"] else ""
        for piece in _halves(arguments) if arguments else [""]:
            yield _delta(index, {"type": "input_json_delta", "partial_json": piece})
    elif kind == "redacted_thinking":
        yield _start(index, block)
    else:  # thinking
        yield _start(index, {"type": "thinking", "thinking": "", "signature": ""})
        yield _delta(index, {"type": "thinking_delta", "thinking": block["thinking"]})
        yield _delta(index, {"type": "signature_delta", "signature": block["signature"]})
    yield {"type": "content_block_stop", "index": index}


def _start(index: int, block: JSON) -> JSON:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: JSON) -> JSON:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _halves(value: str) -> list[str]:
    middle = len(value) // 2
    return [part for part in (value[:middle], value[middle:]) if part]


# -- the history rules --------------------------------------------------------------------


def validate(body: Mapping[str, Any]) -> str | None:
    """The API's error message for the first rule `body` breaks, or None if it is valid."""
    checks = (
        _check_tools,
        _check_blocks,
        _check_unique_ids,
        _check_pairing,
        _check_thinking,
        _check_cache_marks,
    )
    for check in checks:
        problem = check(body)
        if problem is not None:
            return problem
    return None


def _blocks(message: Mapping[str, Any]) -> list[JSON]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _check_tools(body: Mapping[str, Any]) -> str | None:
    for index, tool in enumerate(body.get("tools") or ()):
        if not NAME_PATTERN.match(str(tool.get("name", ""))):
            return (
                f"tools.{index}.custom.name: String should match pattern '{NAME_PATTERN.pattern}'"
            )
    return None


def _check_blocks(body: Mapping[str, Any]) -> str | None:
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        final_assistant = i == len(messages) - 1 and message.get("role") == "assistant"
        if not blocks and not final_assistant:
            return (
                f"messages.{i}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        problem = _check_texts(blocks)
        if problem is not None:
            return problem
        for j, block in enumerate(blocks):
            where = f"messages.{i}.content.{j}"
            problem = _check_media(block, where, message.get("role"))
            if problem is not None:
                return problem
            if block["type"] == "tool_use":
                if not ID_PATTERN.match(str(block.get("id", ""))):
                    return (
                        f"{where}.tool_use.id: String should match pattern '{ID_PATTERN.pattern}'"
                    )
                if not isinstance(block.get("input"), dict):
                    return f"{where}.tool_use.input: Input should be a valid dictionary"
            if block["type"] == "tool_result":
                if not ID_PATTERN.match(str(block.get("tool_use_id", ""))):
                    return (
                        f"{where}.tool_result.tool_use_id: String should match pattern "
                        f"'{ID_PATTERN.pattern}'"
                    )
                inner = block.get("content")
                if isinstance(inner, list):
                    problem = _check_texts(inner)
                    if problem is not None:
                        return problem
    return None


IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _check_media(block: Mapping[str, Any], where: str, role: object) -> str | None:
    kind = block["type"]
    if kind not in ("image", "document"):
        return None
    if role != "user":
        return f"{where}: {kind} blocks are only allowed in user messages"
    source = block.get("source") or {}
    allowed = {
        ("image", "base64"): IMAGE_TYPES,
        ("image", "url"): None,
        ("document", "base64"): ("application/pdf",),
        ("document", "text"): ("text/plain",),
    }
    key = (kind, source.get("type"))
    if key not in allowed:
        return f"{where}.{kind}.source: Input tag '{source.get('type')}' is not valid"
    field = "url" if key == ("image", "url") else "data"
    if not isinstance(source.get(field), str) or not source.get(field):
        return f"{where}.{kind}.source.{key[1]}.{field}: Field required"
    media_types = allowed[key]
    if media_types is not None and source.get("media_type") not in media_types:
        expected = ", ".join(f"'{t}'" for t in media_types)
        return f"{where}.{kind}.source.{key[1]}.media_type: Input should be {expected}"
    return None


def _check_texts(blocks: Sequence[Mapping[str, Any]]) -> str | None:
    """`[text:'']` is rejected anywhere; whitespace-only text only when nothing else is there."""
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    if any(t == "" for t in texts):
        return "messages: text content blocks must be non-empty"
    substance = any(b.get("type") != "text" or str(b.get("text", "")).strip() for b in blocks)
    if texts and not substance:
        return "messages: text content blocks must contain non-whitespace text"
    return None


def _check_unique_ids(body: Mapping[str, Any]) -> str | None:
    seen: set[str] = set()
    for i, message in enumerate(body.get("messages") or []):
        for j, block in enumerate(_blocks(message)):
            if block["type"] == "tool_use":
                if block["id"] in seen:
                    return f"messages.{i}.content.{j}: `tool_use` ids must be unique"
                seen.add(block["id"])
    return None


def _check_pairing(body: Mapping[str, Any]) -> str | None:
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        if message.get("role") == "user":
            previous = _blocks(messages[i - 1]) if i > 0 else []
            offered = {b["id"] for b in previous if b["type"] == "tool_use"}
            for j, block in enumerate(blocks):
                if block["type"] == "tool_result" and block["tool_use_id"] not in offered:
                    return (
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block['tool_use_id']}. Each `tool_result` block "
                        "must have a corresponding `tool_use` block in the previous message."
                    )
            continue
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        if not calls:
            continue
        first_call = next(j for j, b in enumerate(blocks) if b["type"] == "tool_use")
        after_calls = any(b["type"] != "tool_use" for b in blocks[first_call:])
        following = _blocks(messages[i + 1]) if i + 1 < len(messages) else []
        answered = {b["tool_use_id"] for b in following if b["type"] == "tool_result"}
        missing = calls if after_calls else [c for c in calls if c not in answered]
        if missing:
            return (
                f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
        leading = [b["type"] for b in following[: len(answered)]]
        if leading.count("tool_result") != len(answered):
            return (
                f"Did not find {len(answered)} tool_result block(s) at the beginning of this "
                "message. Messages following tool_use blocks must begin with a matching number "
                "of tool_result blocks."
            )
    return None


def thinking_on(body: Mapping[str, Any]) -> bool:
    return (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")


def _check_thinking(body: Mapping[str, Any]) -> str | None:
    if not thinking_on(body):
        return None
    messages = body.get("messages") or []
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") != "assistant":
            continue
        blocks = _blocks(messages[i])
        if any(b["type"] == "tool_use" for b in blocks) and blocks[0]["type"] not in (
            "thinking",
            "redacted_thinking",
        ):
            return (
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{blocks[0]['type']}`. {THINKING_TEXT}"
            )
        return None
    return None


def _check_cache_marks(body: Mapping[str, Any]) -> str | None:
    ttls = [_ttl(block["cache_control"]) for block in _units(body) if "cache_control" in block]
    if len(ttls) > MAX_BREAKPOINTS:
        return (
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(ttls)}."
        )
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        return TTL_ORDER_TEXT
    return None


def _ttl(control: Mapping[str, Any]) -> str:
    return str(control.get("ttl") or "5m")


def _units(body: Mapping[str, Any]) -> list[JSON]:
    """The request's blocks in wire order: tools, system blocks, then each turn's blocks."""
    system = body.get("system") or []
    blocks = [*(body.get("tools") or []), *([text(system)] if isinstance(system, str) else system)]
    for message in body.get("messages") or []:
        blocks.extend(_blocks(message))
    return blocks


def unmarked(value: Any) -> Any:
    """JSON without its `cache_control` marks (they move; they are not part of a prefix)."""
    if isinstance(value, Mapping):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(item) for item in value]
    return value


def prefix_of(body: Mapping[str, Any], turns: int) -> str:
    """A digest of the system prompt, the tools and the first `turns` turns, marks aside."""
    system = body.get("system") or []
    shown = {
        "system": [text(system)] if isinstance(system, str) else system,
        "tools": body.get("tools") or [],
        "messages": [
            {"role": m.get("role"), "content": _blocks(m)}
            for m in (body.get("messages") or [])[:turns]
        ],
    }
    return hashlib.sha256(json.dumps(unmarked(shown), sort_keys=True).encode()).hexdigest()


def _visible(blocks: Sequence[JSON]) -> list[JSON]:
    return [b for b in blocks if not (b["type"] == "text" and not str(b.get("text", "")).strip())]


@dataclass(frozen=True)
class _Issued:
    """A reply with thinking, and the prefix of the request it answered."""

    prefix: str
    content: list[JSON]


def _check_signatures(body: Mapping[str, Any], issued: Mapping[str, _Issued]) -> str | None:
    """Preserved thinking: each thinking block sent back is one the server made, in its turn
    as made, after the prefix it was made after."""
    messages = body.get("messages") or []
    assistants = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    for i in assistants:
        blocks = _blocks(messages[i])
        for j, block in enumerate(blocks):
            if block["type"] not in THINKING_KINDS:
                continue
            where = f"messages.{i}.content.{j}"
            made = issued.get(str(block.get("signature") or block.get("data")))
            if made is None:
                return f"{where}: {UNKNOWN_SIGNATURE_TEXT}"
            if _visible(blocks) != _visible(made.content):
                if i == assistants[-1]:
                    return f"{where}: {MODIFIED_TEXT}"
                return f"{where}: {BOUND_TEXT}"
            if prefix_of(body, i) != made.prefix:
                return f"{where}: {BOUND_TEXT}"
    return None


class PromptCache:
    """The API's prompt cache, counted: which marked prefixes it holds, and their size."""

    def __init__(self) -> None:
        self._held: dict[str, int] = {}

    def usage(self, body: Mapping[str, Any]) -> JSON:
        """The input token counts of `body`, and the cache entries its breakpoints write."""
        digest = hashlib.sha256()
        total, read, marked_end = 0, 0, 0
        written: dict[str, int] = {}
        for block in _units(body):
            clean = json.dumps(unmarked(block), sort_keys=True)
            digest.update(clean.encode())
            total += len(clean) // 4 + 1
            key = digest.hexdigest()
            if key in self._held:
                read = total
            if "cache_control" in block:
                written[key] = marked_end = total
        if not written:  # a request without breakpoints neither reads nor writes
            read = 0
        write = max(0, marked_end - read)
        self._held.update(written)
        return {
            "input_tokens": total - read - write,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }


# -- the server ---------------------------------------------------------------------------


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout test) is expected; anything else is reported."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeAnthropic:
    """The server: `url` for base_url, `requests` as received, `rejections` it answered 400,
    `credentials` the key each request carried (its `x-api-key`, or its bearer token)."""

    def __init__(self, replies: Iterable[Reply] = ()) -> None:
        self.replies = list(replies)
        self.requests: list[JSON] = []
        self.credentials: list[str] = []
        self.times: list[float] = []
        self.rejections: list[str] = []
        self.cache = PromptCache()
        self.issued: dict[str, _Issued] = {}  # thinking signature (or data) -> its reply
        self.closing = threading.Event()  # ends delays and drips when the test is over
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def answer(self, body: JSON) -> Reply:
        """What to send for `body`: a 400 if it breaks a rule, else the next scripted reply."""
        with self._lock:
            self.requests.append(body)
            self.times.append(time.monotonic())
            problem = validate(body)
            if problem is None and thinking_on(body):
                problem = _check_signatures(body, self.issued)
            if problem is not None:
                self.rejections.append(problem)
                return error(400, "invalid_request_error", problem)
            if not self.replies:
                return error(400, "invalid_request_error", "fake server: no scripted reply left")
            reply = self.replies.pop(0)
            if reply.message is None or "usage" not in reply.message:
                return reply
            usage = {**reply.message["usage"], **self.cache.usage(body)}
            sent = {**reply.message, "usage": usage}
            made = _Issued(prefix_of(body, len(body.get("messages") or [])), sent["content"])
            for block in sent["content"]:
                if block["type"] in THINKING_KINDS:
                    self.issued[str(block.get("signature") or block.get("data"))] = made
            return Reply(**{**vars(reply), "message": sent})


def _handler_for(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read `fake.requests` instead."""

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length))
            bearer = (self.headers.get("authorization") or "").removeprefix("Bearer ")
            fake.credentials.append(self.headers.get("x-api-key") or bearer)
            if self.path.split("?")[0] != "/v1/messages":
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}}, {})
                return
            reply = fake.answer(body)
            if fake.closing.wait(reply.delay):
                return
            if reply.page is not None:
                self._send(200, reply.page.encode(), "text/html; charset=utf-8", {})
            elif reply.status != 200 or reply.body is not None:
                self._json(reply.status, reply.body or {}, reply.headers)
            elif body.get("stream"):
                assert reply.message is not None or reply.events is not None
                events = reply.events or stream_events(reply.message or {})
                self._sse(events, reply.broken, reply.drip)
            elif reply.drip:
                self._drip_json(reply.message or {}, reply.drip)
            else:
                self._json(200, reply.message or {}, reply.headers)

        def _json(self, status: int, data: JSON, headers: Mapping[str, str]) -> None:
            self._send(status, json.dumps(data).encode(), "application/json", headers)

        def _send(self, status: int, payload: bytes, kind: str, headers: Mapping[str, str]) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", "req_fake")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _sse(self, events: Sequence[JSON], broken: bool, drip: float) -> None:
            self._chunked("text/event-stream")
            ping = {"type": "ping"}
            self._drip(drip, f"event: ping\ndata: {json.dumps(ping)}\n\n".encode())
            for event in events:
                self._chunk(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            if not broken:
                self._chunk(b"")
            self.close_connection = True

        def _drip_json(self, data: JSON, seconds: float) -> None:
            self._chunked("application/json")
            self._drip(seconds, b" ")
            self._chunk(json.dumps(data).encode())
            self._chunk(b"")
            self.close_connection = True

        def _chunked(self, kind: str) -> None:
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()

        def _drip(self, seconds: float, keep_alive: bytes) -> None:
            """Sends `keep_alive` every 50 ms for `seconds`: no read ever waits long."""
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not fake.closing.wait(0.05):
                self._chunk(keep_alive)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    return Handler


def model_for(fake: FakeAnthropic, **options: Any) -> AnthropicModel:
    """An `AnthropicModel` whose SDK client talks to `fake`."""
    return AnthropicModel("claude-fake", base_url=fake.url, api_key="test-key", **options)
