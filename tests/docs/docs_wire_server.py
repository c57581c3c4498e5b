"""A local stand-in for the OpenAI Chat Completions, Anthropic Messages and Gemini APIs, for the
docs' provider snippets: they run unchanged (`Agent("openai:gpt-4.1-mini")`, `"anthropic:..."`,
`"ollama:..."`, `"google:..."`) with the SDKs talking to 127.0.0.1 through `OPENAI_BASE_URL`,
`ANTHROPIC_BASE_URL`, `OLLAMA_HOST` and `GOOGLE_GEMINI_BASE_URL`.

It answers as `TestModel` does: a request that offers tools and carries no tool results since
the user's message gets one call to every tool, with arguments made from its schema; any other
request gets a text answer that quotes the tool results. A typed run's `final_answer` is called
after the other tools. Replies are plain JSON (the snippets do not stream).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from steadyloop.testing import example_arguments
from support.http import Handler, LocalServer

__all__ = ["WireServer"]

JSON = dict[str, Any]
FINAL_ANSWER = "final_answer"


class WireServer:
    """The server, as a context manager: `url` is its root (`url + "/v1"` for OpenAI)."""

    api_key = "sk-docs"

    def __init__(self) -> None:
        self.requests: list[tuple[str, JSON]] = []
        self._server = LocalServer(_handler(self))

    @property
    def url(self) -> str:
        return self._server.url

    def __enter__(self) -> WireServer:
        self._server.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.__exit__(*exc_info)

    def answer(self, path: str, body: JSON) -> tuple[int, JSON]:
        self.requests.append((path, body))
        if path.endswith("/chat/completions"):
            return 200, _chat_reply(body)
        if path.endswith("/messages") or path.endswith("/invoke"):  # Anthropic, Bedrock
            return 200, _anthropic_reply(body)
        if path.endswith(":generateContent"):
            return 200, _gemini_reply(body)
        return 404, {"error": {"message": f"no such endpoint: {path}", "type": "not_found"}}


def _plan(tools: Sequence[JSON], results: Sequence[str] | None) -> list[JSON] | None:
    """The tools to call now (each `{"name", "parameters"}`), or None to answer in text."""
    others = [t for t in tools if t["name"] != FINAL_ANSWER]
    answer = [t for t in tools if t["name"] == FINAL_ANSWER]
    if results is None and others:
        return others
    return answer or None


def _text(results: Sequence[str] | None) -> str:
    if not results:
        return "(wire) Hello."
    return "(wire) The tools said: " + " | ".join(results)


def _chat_reply(body: JSON) -> JSON:
    tools = [
        {"name": t["function"]["name"], "parameters": t["function"].get("parameters", {})}
        for t in body.get("tools", ())
    ]
    results: list[str] = []
    for message in reversed(body.get("messages", ())):
        if message.get("role") != "tool":
            break
        results.insert(0, _content_text(message.get("content")))
    calls = _plan(tools, results or None)
    reply: JSON = {"role": "assistant", "content": None if calls else _text(results)}
    if calls:
        reply["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": t["name"],
                    "arguments": json.dumps(example_arguments(t["parameters"])),
                },
            }
            for i, t in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-docs",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", ""),
        "choices": [
            {"index": 0, "message": reply, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


def _anthropic_reply(body: JSON) -> JSON:
    tools = [
        {"name": t["name"], "parameters": t.get("input_schema", {})} for t in body.get("tools", ())
    ]
    last = body["messages"][-1]
    blocks = last["content"] if isinstance(last["content"], list) else []
    results = [_content_text(b.get("content")) for b in blocks if b.get("type") == "tool_result"]
    calls = _plan(tools, results or None)
    content: list[JSON]
    if calls:
        content = [
            {
                "type": "tool_use",
                "id": f"toolu_{i}",
                "name": t["name"],
                "input": example_arguments(t["parameters"]),
            }
            for i, t in enumerate(calls)
        ]
    else:
        content = [{"type": "text", "text": _text(results)}]
    return {
        "id": "msg_docs",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 5},
    }


def _gemini_reply(body: JSON) -> JSON:
    tools = [
        {"name": d["name"], "parameters": d.get("parametersJsonSchema", {})}
        for tool in body.get("tools", ())
        for d in tool.get("functionDeclarations", ())
    ]
    last = body["contents"][-1]["parts"]
    results = [
        json.dumps(p["functionResponse"]["response"]) for p in last if "functionResponse" in p
    ]
    calls = _plan(tools, results or None)
    parts: list[JSON]
    if calls:
        parts = [
            {"functionCall": {"name": t["name"], "args": example_arguments(t["parameters"])}}
            for t in calls
        ]
    else:
        parts = [{"text": _text(results)}]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 5},
        "responseId": "docs",
    }


def _content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of blocks with text."""
    if isinstance(content, str):
        return content
    return " ".join(_texts(content or ()))


def _texts(blocks: Sequence[Any]) -> Iterator[str]:
    for block in blocks:
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            yield block["text"]


def _handler(server: WireServer) -> type[Handler]:
    class WireHandler(Handler):
        def do_POST(self) -> None:
            status, reply = server.answer(self.path, self.read_json())
            self.send_json(status, reply)

    return WireHandler
