"""Reading the recorded Anthropic traffic in tests/fixtures/provider-cassettes/.

Four formats (see that folder's README): pydantic-ai's vcrpy YAML with `parsed_body`, plain
vcrpy YAML (bodies as text or gzip bytes), dd-trace-py's JSON cassette and opencode's JSON
recording. Each becomes a list of `Interaction`s with the request body and the response as data.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from steadyloop.messages import AssistantMessage, Message, ToolResult, UserMessage
from steadyloop.models.anthropic_wire import parse_message
from steadyloop.models.wire import ToolNames

CASSETTES = Path(__file__).resolve().parents[1] / "fixtures" / "provider-cassettes"
TRANSCRIBED = CASSETTES / "transcribed" / "provider-error-bodies.json"
NO_NAMES = ToolNames(())
RECORDINGS = (
    "pydantic-ai/test_anthropic/test_multiple_parallel_tool_calls.yaml",
    "pydantic-ai/test_anthropic/test_anthropic_tool_with_thinking.yaml",
    "pydantic-ai/test_anthropic/test_anthropic_tool_output.yaml",
    "pydantic-ai/test_anthropic/test_anthropic_explicit_effort_xhigh_unsupported_model_errors.yaml",
    "simonw-llm-anthropic/test_anthropic/test_tools.yaml",
    "simonw-llm-anthropic/test_anthropic/test_stream_events_tool_calls.yaml",
    "simonw-llm-anthropic/test_anthropic/test_fixed_version_tool_chain_regression.yaml",
    "simonw-llm-anthropic/test_anthropic/test_fixed_version_tool_chain_with_thinking_display_regression.yaml",
    "dd-trace-py/anthropic/anthropic_completion_error.yaml",
    "dd-trace-py/anthropic/anthropic_completion_tools_call_with_tool_result_stream.yaml",
    "dd-trace-py/anthropic/anthropic_v1_messages_post_4ff9791e.json",
    "opencode/anthropic-messages/rejects-malformed-assistant-tool-order-without-patch.json",
)


@dataclass(frozen=True)
class Interaction:
    request: dict[str, Any]
    status: int
    headers: dict[str, str]
    body: Any  # a dict for JSON replies, the text for SSE streams

    @property
    def streamed(self) -> bool:
        return isinstance(self.body, str) and "event: message_start" in self.body


@functools.cache
def load(relative: str) -> tuple[Interaction, ...]:
    """The interactions of one recording, whatever its format."""
    path = CASSETTES / relative
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        raw = data.get("interactions", [data])
        return tuple(_from_json(item) for item in raw)
    data = yaml.safe_load(path.read_text())
    return tuple(_from_vcr(item) for item in data["interactions"])


def _from_json(item: Mapping[str, Any]) -> Interaction:
    response = item["response"]
    status = response["status"]
    return Interaction(
        request=json.loads(item["request"]["body"]),
        status=status["code"] if isinstance(status, Mapping) else int(status),
        headers={k.lower(): str(v) for k, v in response.get("headers", {}).items()},
        body=_body(response["body"]),
    )


def _from_vcr(item: Mapping[str, Any]) -> Interaction:
    request, response = item["request"], item["response"]
    body = response.get("parsed_body")
    if body is None:
        raw = response["body"]["string"]
        body = _body(gzip.decompress(raw).decode() if isinstance(raw, bytes) else raw)
    headers = {
        k.lower(): str(v[0] if isinstance(v, list) else v) for k, v in response["headers"].items()
    }
    return Interaction(
        request=request.get("parsed_body") or json.loads(request["body"]),
        status=response["status"]["code"],
        headers=headers,
        body=body,
    )


def _body(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def sse_events(text: str) -> list[dict[str, Any]]:
    """The `data` of each server-sent event, in order (pings included)."""
    events = []
    for chunk in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in chunk.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def transcribed(entry_id: str) -> dict[str, Any]:
    """One entry of the transcribed error bodies, by id."""
    entries = json.loads(TRANSCRIBED.read_text())["entries"]
    found: dict[str, Any] = next(e for e in entries if e["id"] == entry_id)
    return found


def history_from_request(body: Mapping[str, Any]) -> list[Message]:
    """The canonical messages a recorded request's `messages` stand for."""
    history: list[Message] = []
    names: dict[str, str] = {}
    for turn in body["messages"]:
        content = turn["content"]
        blocks: Sequence[Mapping[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        if turn["role"] == "assistant":
            reply = parse_message({"content": blocks}, NO_NAMES)
            names.update((call.id, call.name) for call in reply.tool_calls)
            history.append(AssistantMessage(reply.text, reply.tool_calls))
            continue
        for block in blocks:
            if block["type"] == "tool_result":
                call_id = block["tool_use_id"]
                history.append(
                    ToolResult(
                        call_id,
                        names.get(call_id, "?"),
                        _result_text(block.get("content")),
                        bool(block.get("is_error", False)),
                    )
                )
            elif block["type"] == "text":
                history.append(UserMessage(block["text"]))
    return history


def _result_text(content: object) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content or "")


def normalised(turns: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Turns with string content as one text block and `is_error: false` left out."""
    out = []
    for turn in turns:
        content = turn["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        cleaned = []
        for block in blocks:
            block = {k: v for k, v in block.items() if not (k == "is_error" and v is False)}
            if isinstance(block.get("content"), list) and block["type"] == "tool_result":
                block["content"] = _result_text(block["content"])
            cleaned.append(block)
        out.append({"role": turn["role"], "content": cleaned})
    return out
