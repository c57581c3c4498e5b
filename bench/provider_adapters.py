"""What a provider adapter costs the loop: S1 through the real adapters and SDKs, each answered
in process with a reply of its provider's recorded shape, the Gemini adapter against the OpenAI
Chat Completions one.

    uv run python bench/provider_adapters.py [--quick]

S1's async configuration (20 turns x 3 adds). Each adapter's SDK client gets an in-process HTTP
transport (`httpx.MockTransport`) that answers every request at once from S1's script with the
JSON the provider sends: a `chat.completion` with three tool calls for OpenAI; for Gemini a
Gemini 3 `GenerateContentResponse` with three function calls, a thought signature on the
first (so the reply is kept and sent back each turn, as it must be), usage with thinking
tokens. So the figure holds the adapter's work both ways and its SDK's HTTP path, and no
network. Blocks of ten runs alternate adapter by adapter, the first round a warm-up. Prints a
JSON object: µs per turn for each adapter and the ratio Gemini / OpenAI (median, min, max).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "drivers"))

import common
import httpx2 as httpx
from steadyloop_driver import per_turn_us

from steadyloop import Agent, Limits, tool
from steadyloop.models.base import Model

# A Gemini 3 signature is opaque bytes, a few hundred of them; this one has their size.
SIGNATURE = base64.b64encode(bytes(range(256)) * 2).decode()


def openai_reply(request: httpx.Request) -> httpx.Response:
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
    import openai

    from steadyloop.models.openai_chat import OpenAIChatModel

    http = httpx.AsyncClient(transport=httpx.MockTransport(openai_reply))
    client = openai.AsyncOpenAI(api_key="sk-bench", max_retries=0, http_client=http)
    return OpenAIChatModel("gpt-4.1-mini", client=client)


def gemini_model() -> Model:
    from steadyloop.models.google import GoogleModel

    http = httpx.AsyncClient(transport=httpx.MockTransport(gemini_reply))
    options = {"base_url": "https://generativelanguage.googleapis.com", "httpx_async_client": http}
    return GoogleModel("gemini-3-flash-preview", api_key="bench-key", http_options=options)


class AdapterRunner:
    def __init__(self, plan: common.Plan, model: Model) -> None:
        self.agent = Agent(
            model,
            tools=[tool(plan.function)],
            limits=Limits(max_turns=plan.turns + 1, max_context_tokens=10_000_000),
        )

    async def run(self) -> str:
        return (await self.agent.run(common.PROMPT)).output


async def rounds(quick: bool) -> dict[str, Any]:
    plan = common.Plan(turns=20, calls=3, is_async=True)
    block = 2 if quick else 10
    reps = 3 if quick else 30
    runners = {
        "openai": AdapterRunner(plan, openai_model()),
        "google": AdapterRunner(plan, gemini_model()),
    }
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for number in range(reps + 1):
        for name, runner in runners.items():
            elapsed = await per_turn_us(runner, plan, block, "provider adapters", lambda: None)
            if number > 0:  # the first round warms up
                samples[name].append(elapsed)
    for runner in runners.values():
        await runner.agent.aclose()
    figures: dict[str, Any] = {name: common.spread(values) for name, values in samples.items()}
    ratios = [g / o for o, g in zip(samples["openai"], samples["google"], strict=True)]
    figures["ratio_google_to_openai"] = common.spread(ratios)
    for values in figures.values():
        values.pop("values")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds, for a smoke test")
    print(json.dumps(asyncio.run(rounds(parser.parse_args().quick)), indent=2))


if __name__ == "__main__":
    main()
