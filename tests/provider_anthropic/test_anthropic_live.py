"""One tiny call to the real Anthropic API; runs only when ANTHROPIC_API_KEY is set.

`ANTHROPIC_TEST_MODEL` picks the model (default: claude-haiku-4-5).
"""

from __future__ import annotations

import os

import pytest

from steadyloop import Agent, tool
from steadyloop.models.anthropic import AnthropicModel
from steadyloop.retry import Backoff

pytestmark = pytest.mark.skipif(
    not os.environ.get("ANTHROPIC_API_KEY"), reason="ANTHROPIC_API_KEY is not set"
)


@tool
def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


async def test_real_call_with_one_tool() -> None:
    model = AnthropicModel(
        os.environ.get("ANTHROPIC_TEST_MODEL", "claude-haiku-4-5"), max_tokens=200
    )
    async with Agent(model, tools=[add], backoff=Backoff(1.0, 10.0, 0.5)) as agent:
        result = await agent.run("Use the add tool to add 2 and 40, then say only the number.")
    assert "42" in result.output
    assert result.usage.input_tokens > 0
