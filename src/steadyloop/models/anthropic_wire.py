"""The Anthropic Messages wire format: canonical messages to request JSON, reply JSON back.

Plain dicts in, plain dicts out (what the SDK sends and receives), so the same functions run on
recorded traffic. The history first goes through `prepare_history` (ids valid, unique and
paired; every call answered), then these rules keep the request one Anthropic accepts
(numbers from FAILURES.md):

- an own reply (same endpoint and model, `Native.is_own`) goes back as its `content` exactly as
  received, block for block: thinking with its signature, redacted thinking, every text block,
  `tool_use` as received. The API's own exceptions: whitespace-only text blocks are left out
  (F20); with thinking off, thinking blocks are left out; a reply whose prefix (instructions,
  tools and the turns before it, without cache marks) is not the one it was made after, or
  whose call ids were made unique, goes as canonical parts, since its thinking is bound to
  that prefix;
- every other reply goes as canonical parts, which follow these rules: the user turn after
  `tool_use` starts with ALL its `tool_result` blocks, text after (F03a); consecutive canonical
  turns of one role are merged (never into an own one); a turn is text, then `tool_use` (text
  never after a call, F03b); `input` is always an object (F13); no empty or whitespace-only
  text block; a turn left with nothing gets a short placeholder (F20); a tool result with no
  text is still sent, without content (F29);
- thinking fallback: with thinking on, a request ending in an unfinished tool loop whose
  latest assistant turn does not begin with its own thinking goes with thinking disabled and
  no thinking block anywhere, the only form the API accepts then;
- prompt caching (`ModelRequest.cache`): a breakpoint on the last system block (the system
  prompt is then a list of blocks) or, without instructions, on the last tool, and on the last
  block of each of the latest user turns;
- a prompt's images are `image` blocks (base64, or a URL source), PDFs and text files
  `document` blocks, in the prompt's order.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from steadyloop.cache import Cache
from steadyloop.errors import ContextWindowExceeded
from steadyloop.events import TextDelta, ToolCallDelta
from steadyloop.media import Document, Image
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
from steadyloop.models.base import ModelRequest
from steadyloop.models.wire import IdRules, MediaRules, ToolNames, prepare_history
from steadyloop.tools import ToolSpec

__all__ = [
    "ANTHROPIC_IDS",
    "PROVIDER",
    "StreamAssembler",
    "Target",
    "WireRequest",
    "build_request",
    "parse_message",
    "parse_usage",
    "to_wire_messages",
]

PROVIDER = "anthropic"
ANTHROPIC_IDS = IdRules(pattern=re.compile(r"^[a-zA-Z0-9_-]+$"), max_length=64, prefix="toolu_")
MEDIA = MediaRules(PROVIDER)  # images (also by URL), PDFs and text documents
EMPTY_ASSISTANT_TEXT = "(no reply)"
EMPTY_USER_TEXT = "(no message)"
START_TEXT = "(the conversation so far)"
THINKING_KINDS = frozenset({"thinking", "redacted_thinking"})
DISABLED_THINKING = {"type": "disabled"}
# Order of blocks inside a canonical turn: results, then text and images, then calls.
_RANK = {"tool_result": 0, "tool_use": 2}

Block = dict[str, Any]
Turn = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Target:
    """Where a request goes: which replies are own (`endpoint`, `model`), and whether the
    model's settings turn thinking on."""

    endpoint: str = ""
    model: str = ""
    thinking: bool = False


@dataclass(frozen=True, slots=True)
class WireRequest:
    """The `system`, `messages` and `tools` fields of one call (`body`); `prefix`, the digest
    of all of it without cache marks, which the reply is bound to; `thinking_off`, whether the
    thinking fallback applies (send `thinking: DISABLED_THINKING`)."""

    body: dict[str, Any]
    prefix: str
    thinking_off: bool = False


def build_request(
    request: ModelRequest, names: ToolNames, target: Target = Target()
) -> WireRequest:
    """The request fields for `request`, every rule in the module docstring applied."""
    system = request.instructions if request.instructions and request.instructions.strip() else None
    tools = [tool_to_wire(spec, names) for spec in request.tools]
    head = _Prefix(system, tools)
    thinking_off = False
    turns = _turns(request.messages, names, target, head, target.thinking)
    if target.thinking and _needs_fallback(turns):
        thinking_off = True
        head = _Prefix(system, tools)
        turns = _turns(request.messages, names, target, head, thinking=False)
    prefix = head.digest(turns)
    if request.cache is not None:
        _mark(request.cache, system, tools, turns)
    body: dict[str, Any] = {"messages": turns}
    if system is not None:
        ttl = request.cache.prefix_ttl if request.cache is not None else None
        body["system"] = system if ttl is None else [_marked(_text(system), ttl)]
    if tools:
        body["tools"] = tools
    return WireRequest(body, prefix, thinking_off)


def tool_to_wire(spec: ToolSpec, names: ToolNames) -> Block:
    """A tool definition; names the API rejects are mapped (F25)."""
    tool: Block = {"name": names.to_wire(spec.name), "input_schema": dict(spec.parameters)}
    if spec.description:
        tool["description"] = spec.description
    return tool


def to_wire_messages(
    messages: Sequence[Message], names: ToolNames, target: Target = Target()
) -> list[Turn]:
    """The `messages` list of a request without instructions or tools."""
    return _turns(messages, names, target, _Prefix(None, []), target.thinking)


class _Prefix:
    """A running digest of the request so far (instructions, tools, finished turns), compared
    with an own reply's `Native.prefix`: equal means the reply follows what it was made after."""

    def __init__(self, system: str | None, tools: Sequence[Block]) -> None:
        self._hash = hashlib.sha256(_json({"system": system, "tools": tools}))
        self._done = 0

    def digest(self, turns: Sequence[Turn]) -> str:
        for turn in turns[self._done :]:
            self._hash.update(_json(turn))
        self._done = len(turns)
        return self._hash.copy().hexdigest()


def _json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


def _turns(
    messages: Sequence[Message], names: ToolNames, target: Target, head: _Prefix, thinking: bool
) -> list[Turn]:
    turns: list[Turn] = []
    own: set[int] = set()  # indexes of the turns sent as received

    def start(role: str, content: list[Block]) -> None:
        if turns and len(turns) - 1 not in own:
            _finish(turns[-1])
        turns.append({"role": role, "content": content})

    for message in prepare_history(messages, ANTHROPIC_IDS, own=lambda m: _is_own(m, target)):
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        if not turns and role == "assistant":
            start("user", [_text(START_TEXT)])
        native = message.native if isinstance(message, AssistantMessage) else None
        if native is not None and _is_own(message, target):
            # It was made after a user turn; its thinking is bound to all that came before.
            content = _own_content(message, native, thinking)
            if content is not None and turns and turns[-1]["role"] == "user":
                _finish(turns[-1])
                if head.digest(turns) == native.prefix:
                    start("assistant", content)
                    own.add(len(turns) - 1)
                    continue
        blocks = _blocks(message, names)
        if turns and turns[-1]["role"] == role and len(turns) - 1 not in own:
            turns[-1]["content"].extend(blocks)
        else:
            start(role, blocks)
    if turns and len(turns) - 1 not in own:
        _finish(turns[-1])
    return turns


def _is_own(message: Message, target: Target) -> bool:
    native = message.native if isinstance(message, AssistantMessage) else None
    return native is not None and native.is_own(PROVIDER, target.endpoint, target.model)


def _own_content(message: Message, native: Native, thinking: bool) -> list[Block] | None:
    """An own reply's blocks as received, less what the API refuses in a request; None when it
    must go as canonical parts (its call ids changed on the way, or nothing is left)."""
    received = native.content
    calls = message.tool_calls if isinstance(message, AssistantMessage) else ()
    if not isinstance(received, list):
        return None
    blocks = [
        dict(block)
        for block in received
        if isinstance(block, Mapping)
        and not (block.get("type") == "text" and not str(block.get("text") or "").strip())
        and (thinking or block.get("type") not in THINKING_KINDS)
    ]
    ids = [block.get("id") for block in blocks if block.get("type") == "tool_use"]
    if not blocks or ids != [call.id for call in calls]:
        return None
    return blocks


def _finish(turn: Turn) -> None:
    """A canonical turn in the API's order, never empty. Idempotent."""
    turn["content"].sort(key=lambda block: _RANK.get(block["type"], 1))
    if not turn["content"]:
        empty = EMPTY_ASSISTANT_TEXT if turn["role"] == "assistant" else EMPTY_USER_TEXT
        turn["content"].append(_text(empty))


def _needs_fallback(turns: Sequence[Turn]) -> bool:
    """With thinking on: the request ends in an unfinished tool loop whose latest assistant
    turn does not begin with a thinking block, which the API refuses."""
    if not turns or turns[-1]["role"] != "user":
        return False
    if not any(block["type"] == "tool_result" for block in turns[-1]["content"]):
        return False
    latest = next((t for t in reversed(turns) if t["role"] == "assistant"), None)
    return latest is None or latest["content"][0]["type"] not in THINKING_KINDS


def _mark(cache: Cache, system: str | None, tools: list[Block], turns: list[Turn]) -> None:
    """Cache breakpoints: the fixed prefix's on the last tool when there is no system prompt
    (the system block is marked where it is made), and one on the last block of each of the
    `cache.messages` latest user turns."""
    ttl = cache.prefix_ttl
    if ttl is not None and system is None and tools:
        tools[-1] = _marked(tools[-1], ttl)
    users = [turn for turn in turns if turn["role"] == "user"]
    for turn in users[-cache.messages :] if cache.messages else ():
        turn["content"][-1] = _marked(turn["content"][-1], cache.ttl)


def _marked(block: Block, ttl: str) -> Block:
    control: Block = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}
    return {**block, "cache_control": control}


def _blocks(message: Message, names: ToolNames) -> list[Block]:
    if isinstance(message, UserMessage):
        return _texts(message.text) if not message.parts else _parts(message)
    if isinstance(message, Summary):
        return _texts(message.note)
    if isinstance(message, ToolResult):
        return [_tool_result(message)]
    blocks = _texts(message.text)
    blocks.extend(
        {
            "type": "tool_use",
            "id": call.id,
            "name": names.to_wire(call.name),
            "input": _input(call.arguments),
        }
        for call in message.tool_calls
    )
    return blocks


def _tool_result(result: ToolResult) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": result.call_id}
    if result.images:
        block["content"] = [*_texts(result.content), *map(_image, result.images)]
    elif result.content.strip():
        block["content"] = result.content
    if result.is_error:
        block["is_error"] = True
    return block


def _parts(message: UserMessage) -> list[Block]:
    blocks: list[Block] = []
    for part in message.parts:
        if isinstance(part, str):
            blocks.extend(_texts(part))
        else:
            MEDIA.check(part)
            blocks.append(_image(part) if isinstance(part, Image) else _document(part))
    return blocks


def _image(image: Image) -> Block:
    if image.url is not None:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    source = {"type": "base64", "media_type": image.media_type, "data": image.data}
    return {"type": "image", "source": source}


def _document(document: Document) -> Block:
    if document.is_pdf:
        source = {"type": "base64", "media_type": "application/pdf", "data": document.data}
    else:
        source = {"type": "text", "media_type": "text/plain", "data": document.text}
    block: Block = {"type": "document", "source": source}
    if document.name:
        block["title"] = document.name
    return block


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _texts(text: str) -> list[Block]:
    """One text block, or none when the text is empty or whitespace (F20)."""
    return [_text(text)] if text.strip() else []


def _input(arguments: str | Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments as an object: invalid JSON or a non-object becomes {} (F13)."""
    try:
        return dict(ToolCall("", "", arguments).parsed_arguments())
    except ArgumentsError:
        return {}


# -- replies -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a reply came from, kept in its `Native`: the endpoint and model it was asked of,
    and the digest of the request it answers (`WireRequest.prefix`)."""

    endpoint: str
    model: str
    prefix: str


def parse_message(
    data: Mapping[str, Any], names: ToolNames, origin: Origin | None = None
) -> AssistantMessage:
    """A Messages API reply (`type: message`) as a canonical `AssistantMessage`, with its
    `content` kept as `native` when its `origin` is given, and its thinking as
    `reasoning_text`.

    Raises `ContextWindowExceeded` for `stop_reason: model_context_window_exceeded`: the window
    is full, so the next turn cannot fit either; the loop compacts once or stops.
    """
    stop = data.get("stop_reason")
    if stop == "model_context_window_exceeded":
        raise ContextWindowExceeded(
            "the model stopped because its context window is full "
            "(stop_reason model_context_window_exceeded)",
            status=200,
            provider=PROVIDER,
        )
    content = [_without_nulls(block) for block in data.get("content") or ()]
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_use":
            name = names.from_wire(block.get("name") or "")
            calls.append(ToolCall(block.get("id") or "", name, _arguments(block.get("input"))))
        elif kind == "thinking" and block.get("thinking"):
            thoughts.append(block["thinking"])
    native = None
    if origin is not None:
        native = Native(PROVIDER, origin.endpoint, origin.model, content, origin.prefix)
    return AssistantMessage(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=parse_usage(data.get("usage")),
        stop_reason=stop if isinstance(stop, str) else None,
        response_id=str(data["id"]) if data.get("id") else None,
        native=native,
        reasoning_text="\n\n".join(thoughts),
    )


def _without_nulls(value: Any) -> Any:
    """JSON with the keys whose value is null dropped (the reply as kept in `Native`)."""
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _arguments(value: object) -> str:
    """Arguments as the canonical JSON string; text that is not JSON is kept for dispatch."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return "{}"  # a no-argument call streams `partial_json: ""` (F14, F38)
    if isinstance(value, str):
        try:
            return json.dumps(json.loads(value), ensure_ascii=False)
        except ValueError:
            return value  # cut off (max_tokens): dispatch reports it, the loop never runs it
    return json.dumps(value, ensure_ascii=False)


def parse_usage(data: Mapping[str, Any] | None) -> Usage | None:
    """Usage with `input_tokens` counting the whole prompt (Anthropic's excludes cached parts)."""
    if not data:
        return None
    read = int(data.get("cache_read_input_tokens") or 0)
    write = int(data.get("cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0) + read + write,
        output_tokens=int(data.get("output_tokens") or 0),
        requests=1,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


class StreamAssembler:
    """Builds the reply from raw stream events (as dicts), returning the deltas each one brings.

    `ToolCallDelta.index` counts tool calls within the reply (not content blocks). `finished`
    turns true at `message_stop`; `result()` before that means the stream broke (F37).
    """

    def __init__(self, names: ToolNames, origin: Origin | None = None) -> None:
        self._names = names
        self._origin = origin
        self._blocks: dict[int, Block] = {}
        self._calls: dict[int, int] = {}  # content-block index -> tool-call index
        self._message: dict[str, Any] = {"usage": {}}
        self.finished = False

    def feed(self, event: Mapping[str, Any]) -> list[TextDelta | ToolCallDelta]:
        kind = event.get("type")
        if kind == "message_start":
            start = event.get("message") or {}
            if start.get("id"):
                self._message["id"] = start["id"]
            self._merge_usage(start.get("usage"))
        elif kind == "content_block_start":
            return self._start(int(event.get("index") or 0), dict(event["content_block"]))
        elif kind == "content_block_delta":
            return self._delta(int(event.get("index") or 0), event.get("delta") or {})
        elif kind == "message_delta":
            self._message.update((event.get("delta") or {}).items())
            self._merge_usage(event.get("usage"))
        elif kind == "message_stop":
            self.finished = True
        return []

    def result(self) -> AssistantMessage:
        """The whole reply; only valid once `finished`."""
        content = [self._blocks[index] for index in sorted(self._blocks)]
        reply = parse_message({**self._message, "content": content}, self._names, self._origin)
        if reply.native is None:
            return reply
        whole = [_received(block) for block in reply.native.content]
        return replace(reply, native=replace(reply.native, content=whole))

    def _start(self, index: int, block: Block) -> list[TextDelta | ToolCallDelta]:
        self._blocks[index] = block
        if block.get("type") == "tool_use":
            block["input"] = ""  # rebuilt from input_json_delta fragments
            self._calls[index] = len(self._calls)
            name = self._names.from_wire(block.get("name") or "")
            return [ToolCallDelta(self._calls[index], block.get("id"), name, "")]
        text = block.get("text")
        return [TextDelta(text)] if block.get("type") == "text" and text else []

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[TextDelta | ToolCallDelta]:
        kind = delta.get("type")
        if index not in self._blocks:  # a delta with no content_block_start: start one
            start = "tool_use" if kind == "input_json_delta" else "text"
            self._start(index, {"type": start, "id": "", "name": "", "text": ""})
        block = self._blocks[index]
        if kind == "text_delta":
            piece = delta.get("text") or ""
            block["text"] = (block.get("text") or "") + piece
            return [TextDelta(piece)] if piece else []
        if kind == "input_json_delta":
            piece = delta.get("partial_json") or ""
            block["input"] += piece
            return [ToolCallDelta(self._calls[index], None, None, piece)] if piece else []
        if kind == "thinking_delta":
            block["thinking"] = (block.get("thinking") or "") + (delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = (block.get("signature") or "") + (delta.get("signature") or "")
        return []

    def _merge_usage(self, usage: Mapping[str, Any] | None) -> None:
        if usage:
            self._message["usage"].update((k, v) for k, v in usage.items() if v is not None)


def _received(block: Block) -> Block:
    """A streamed block as the API sends it whole: a call's `input` an object (arguments cut
    off by the output limit become {}, the only form the API takes back)."""
    if block.get("type") != "tool_use":
        return block
    return {**block, "input": _input(block.get("input") or "{}")}
