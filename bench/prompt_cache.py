"""The share of input tokens read from the prompt cache over a long Anthropic tool loop.

    uv run python bench/prompt_cache.py [--turns 30] [--no-cache]

One run of an agent with the default `Cache()` against the test suite's Anthropic stand-in
(`tests/provider_anthropic/anthropic_fake_server.py`) through the official SDK, with thinking
on: each reply thinks, says a line and calls a tool returning 2 KB of text, for `--turns` model
calls, the last one answering. The stand-in counts tokens the way the API does with caching: a
request reads the longest prefix that ended at a breakpoint of an earlier request and writes
what its own breakpoints add. Requests it refuses (a history the API would reject) fail the run.

Prints a JSON object: per turn the input, cache-read and cache-write tokens, and the cache-read
share of the input tokens of turns 3 and later (the first two fill the cache).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from provider_anthropic.anthropic_fake_server import (
    FakeAnthropic,
    message,
    model_for,
    text,
    thinking,
    tool_use,
)
from steadyloop import Agent, AssistantMessage, Cache, Limits, tool

PAGE = ("steadyloop measures the cache. " * 70)[:2048]


@tool
def page(number: int) -> str:
    """A page of the manual."""
    return f"page {number}: {PAGE}"


def script(turns: int) -> list[Any]:
    replies = [
        message(
            thinking(f"I should read page {n}.", f"SIG{n}=="),
            text(f"Reading page {n}."),
            tool_use(f"toolu_{n:03d}", "page", {"number": n}),
        )
        for n in range(1, turns)
    ]
    return [*replies, message(thinking("Enough.", "SIGEND=="), text("Read them all."))]


async def measure(turns: int, cache: bool) -> dict[str, Any]:
    with FakeAnthropic(script(turns)) as fake:
        model = model_for(fake, settings={"thinking": {"type": "enabled", "budget_tokens": 1024}})
        agent = Agent(
            model,
            tools=[page],
            instructions="Read the manual page by page.",
            cache=Cache() if cache else False,
            limits=Limits(max_turns=turns),
        )
        async with agent:
            result = await agent.run("Read the manual.")
        if fake.rejections:
            raise SystemExit(f"the stand-in refused a request: {fake.rejections[0]}")
    usages = [m.usage for m in result.messages if isinstance(m, AssistantMessage) and m.usage]
    later = usages[2:]
    read = sum(u.cache_read_tokens for u in later)
    total = sum(u.input_tokens for u in later)
    return {
        "turns": len(usages),
        "cache": cache,
        "per_turn": [
            {"input": u.input_tokens, "read": u.cache_read_tokens, "write": u.cache_write_tokens}
            for u in usages
        ],
        "read_share_from_turn_3": round(read / total, 4) if total else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--no-cache", action="store_true", help="Agent(cache=False)")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.turns, cache=not args.no_cache))
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
