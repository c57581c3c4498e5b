"""One tiny real call per OpenAI API, only when OPENAI_API_KEY is set (skipped otherwise)."""

from __future__ import annotations

import os

import pytest

from steadyloop import Agent, tool

pytestmark = pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY (a real, paid call)"
)


@pytest.mark.parametrize("spec", ["openai:gpt-4.1-mini", "openai-responses:gpt-4.1-mini"])
async def test_real_tool_call_round_trip(spec: str) -> None:
    calls: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        """Adds two integers and returns the sum."""
        calls.append(a + b)
        return a + b

    async with Agent(spec, tools=[add], instructions="Use the add tool for arithmetic.") as agent:
        result = await agent.run("What is 1234 + 4321? Answer with the number only.")
    assert calls == [5555]
    assert "5555" in result.output
    assert result.usage.input_tokens > 0
