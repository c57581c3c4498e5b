"""The Anthropic Messages wire format: canonical messages to request JSON, reply JSON back.

Plain dicts in, plain dicts out (what the SDK sends and receives), so the same functions run on
recorded traffic. The history first goes through `prepare_history` (ids valid, unique and
paired; every call answered), then these rules keep the request one Anthropic accepts
(numbers from FAILURES.md):

- the user turn after `tool_use` starts with ALL its `tool_result` blocks, text after (F03a);
  consecutive turns of one role are merged;
- an assistant turn is thinking blocks first (replayed with their signatures, F40), then text,
  then `tool_use` (text never after a call, F03b); `input` is always an object (F13);
- no empty or whitespace-only text block anywhere; a turn left with nothing gets a short
  placeholder (F20); a tool result with no text is still sent, without content (F29);
- a prompt's images are `image` blocks (base64, or a URL source), PDFs and text files
  `document` blocks, in the prompt's order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from steadyloop.errors import ContextWindowExceeded
from steadyloop.events import TextDelta, ToolCallDelta
from steadyloop.media import Document, Image
from steadyloop.messages import (
    AssistantMessage,
    Message,
    Reasoning,
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
# Order of blocks inside one turn: reasoning, then results, then text and images, then calls.
_RANK = {"thinking": 0, "redacted_thinking": 0, "tool_result": 0, "tool_use": 2}
_REASONING_KEYS = {"thinking": ("thinking", "signature"), "redacted_thinking": ("data",)}

Block = dict[str, Any]
Turn = dict[str, Any]


def build_request(
    request: ModelRequest, names: ToolNames, *, replay_reasoning: bool
) -> dict[str, Any]:
    """The `system`, `messages` and `tools` fields of one Messages API call."""
    out: dict[str, Any] = {
        "messages": to_wire_messages(request.messages, names, replay_reasoning=replay_reasoning)
    }
    if request.instructions and request.instructions.strip():
        out["system"] = request.instructions
    if request.tools:
        out["tools"] = [tool_to_wire(spec, names) for spec in request.tools]
    return out


def tool_to_wire(spec: ToolSpec, names: ToolNames) -> Block:
    """A tool definition; names the API rejects are mapped (F25)."""
    tool: Block = {"name": names.to_wire(spec.name), "input_schema": dict(spec.parameters)}
    if spec.description:
        tool["description"] = spec.description
    return tool


def to_wire_messages(
    messages: Sequence[Message], names: ToolNames, *, replay_reasoning: bool
) -> list[Turn]:
    """The `messages` list: alternating turns, every rule in the module docstring applied."""
    turns: list[Turn] = []
    for message in prepare_history(messages, ANTHROPIC_IDS):
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        blocks = _blocks(message, names, replay_reasoning)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        turn["content"].sort(key=lambda block: _RANK.get(block["type"], 1))
        if not turn["content"]:
            empty = EMPTY_ASSISTANT_TEXT if turn["role"] == "assistant" else EMPTY_USER_TEXT
            turn["content"].append(_text(empty))
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": [_text(START_TEXT)]})
    return turns


def _blocks(message: Message, names: ToolNames, replay_reasoning: bool) -> list[Block]:
    if isinstance(message, UserMessage):
        return _texts(message.text) if not message.parts else _parts(message)
    if isinstance(message, Summary):
        return _texts(message.note)
    if isinstance(message, ToolResult):
        return [_tool_result(message)]
    blocks: list[Block] = []
    if replay_reasoning:
        blocks.extend(dict(r.data) for r in message.reasoning if r.provider == PROVIDER)
    blocks.extend(_texts(message.text))
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
    if not isinstance(arguments, str):
        return dict(arguments)
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# -- replies -------------------------------------------------------------------------------


def parse_message(data: Mapping[str, Any], names: ToolNames) -> AssistantMessage:
    """A Messages API reply (`type: message`) as a canonical `AssistantMessage`.

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
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[Reasoning] = []
    for block in data.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_use":
            name = names.from_wire(block.get("name") or "")
            calls.append(ToolCall(block.get("id") or "", name, _arguments(block.get("input"))))
        elif kind in _REASONING_KEYS:
            kept = {key: block.get(key) or "" for key in _REASONING_KEYS[kind]}
            reasoning.append(Reasoning(PROVIDER, {"type": kind, **kept}))
    return AssistantMessage(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=parse_usage(data.get("usage")),
        stop_reason=stop if isinstance(stop, str) else None,
        reasoning=tuple(reasoning),
        response_id=str(data["id"]) if data.get("id") else None,
    )


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

    def __init__(self, names: ToolNames) -> None:
        self._names = names
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
        return parse_message({**self._message, "content": content}, self._names)

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
