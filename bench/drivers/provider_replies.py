"""S1's replies in each provider's recorded JSON, and the adapters that read them in process.

Each adapter's SDK client gets an `httpx.MockTransport` answering every request at once from
S1's script, so a figure holds the adapter's work both ways and its SDK's HTTP path, and no
network (bench S14's Gemini row, and bench/provider_adapters.py).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import common

from steadyloop.models.base import Model

if TYPE_CHECKING:
    import httpx2 as httpx

# A Gemini 3 signature is opaque bytes, a few hundred of them; this one has their size.
SIGNATURE = base64.b64encode(bytes(range(256)) * 2).decode()


def openai_reply(request: httpx.Request) -> httpx.Response:
    """S1's next reply as an OpenAI `chat.completion`."""
    import httpx2 as httpx

    calls = common.next_reply()
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    if calls is None:
        message["content"] = common.FINAL_TEXT
    else:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in calls
        ]
    body = {
        "id": "chatcmpl-BENCH0123456789",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "stop" if calls is None else "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 812,
            "completion_tokens": 61,
            "total_tokens": 873,
            "prompt_tokens_details": {"cached_tokens": 768, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_bench",
    }
    return httpx.Response(200, json=body)


def gemini_reply(request: httpx.Request) -> httpx.Response:
    """S1's next reply as a Gemini 3 `GenerateContentResponse`: a thought signature on the first
    part (so the reply is kept and sent back each turn, as it must be), thinking tokens."""
    import httpx2 as httpx

    calls = common.next_reply()
    parts: list[dict[str, Any]]
    if calls is None:
        parts = [{"text": common.FINAL_TEXT, "thoughtSignature": SIGNATURE}]
    else:
        parts = [{"functionCall": {"id": c.id, "name": c.name, "args": c.arguments}} for c in calls]
        parts[0]["thoughtSignature"] = SIGNATURE
    body = {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 812,
            "candidatesTokenCount": 61,
            "totalTokenCount": 1001,
            "cachedContentTokenCount": 768,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 812}],
            "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 768}],
            "thoughtsTokenCount": 128,
        },
        "modelVersion": "gemini-3-flash-preview",
        "responseId": "bench-0123456789abcdef",
    }
    return httpx.Response(200, json=body)


def openai_model() -> Model:
    """The OpenAI Chat Completions adapter, its SDK answered by `openai_reply`."""
    import httpx2 as httpx
    import openai

    from steadyloop.models.openai_chat import OpenAIChatModel

    http = httpx.AsyncClient(transport=httpx.MockTransport(openai_reply))
    client = openai.AsyncOpenAI(api_key="sk-bench", max_retries=0, http_client=http)
    return OpenAIChatModel("gpt-4.1-mini", client=client)


def gemini_model() -> Model:
    """The Gemini adapter, its SDK answered by `gemini_reply`."""
    import httpx2 as httpx

    from steadyloop.models.google import GoogleModel

    http = httpx.AsyncClient(transport=httpx.MockTransport(gemini_reply))
    options = {"base_url": "https://generativelanguage.googleapis.com", "httpx_async_client": http}
    return GoogleModel("gemini-3-flash-preview", api_key="bench-key", http_options=options)
