"""The fake server rejects what the real API rejects, with the very same error text.

Each case rebuilds a request that broke a rule in a public report (FAILURES.md, transcribed
bodies) and checks the fake's 400 message equals the recorded one, so the end-to-end tests'
"no rejection" really means "the real API would have accepted it".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from provider_anthropic.anthropic_cassettes import transcribed
from provider_anthropic.anthropic_fake_server import (
    FakeAnthropic,
    model_for,
    text,
    tool_use,
    validate,
)
from steadyloop.errors import ModelError
from steadyloop.messages import UserMessage
from steadyloop.models.base import ModelRequest

JSON = dict[str, Any]
A, B = "toolu_01HqfLWiAKQLsniF2fBGF2KD", "toolu_01SJzDkeAZER935cpGFptTNk"


def filler(count: int) -> list[JSON]:
    """`count` valid alternating turns, starting with the user."""
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": [text(f"turn {i}")]} for i in range(count)]


def result(call_id: str) -> JSON:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def message_of(entry_id: str) -> str:
    body = transcribed(entry_id)["body"]
    if body.startswith("{"):
        message: str = json.loads(body)["error"]["message"]
        return message
    return str(body)


CASES: dict[str, JSON] = {
    # F01: two parallel calls, the next turn answers neither
    "anthropic-tool-use-without-result": {
        "messages": [
            *filler(21),
            {"role": "assistant", "content": [tool_use(A, "bash"), tool_use(B, "bash")]},
            {"role": "user", "content": [text("continue")]},
        ]
    },
    # F02: a result whose call is not in the previous turn
    "anthropic-tool-result-without-use": {
        "messages": [
            *filler(47),
            {"role": "assistant", "content": [tool_use("toolu_ok", "bash")]},
            {
                "role": "user",
                "content": [result("toolu_ok"), result("toolu_019ETtGZEhTBXgWPVsdVnXMh")],
            },
        ]
    },
    # F02: history trimmed so that it starts with a result
    "anthropic-tool-result-without-use-at-head": {
        "messages": [{"role": "user", "content": [result("toolu_01FfCGddPyWsq3gCLqXtsJki")]}]
    },
    # F22
    "anthropic-duplicate-tool-use-ids": {
        "messages": [
            {"role": "user", "content": [text("go")]},
            {
                "role": "assistant",
                "content": [text("two"), tool_use("t1", "a"), tool_use("t1", "a")],
            },
            {"role": "user", "content": [result("t1")]},
        ]
    },
    # F20
    "anthropic-empty-message": {"messages": [{"role": "user", "content": []}]},
    "anthropic-whitespace-text-block": {"messages": [{"role": "user", "content": [text(" ")]}]},
    "anthropic-empty-text-block": {
        "messages": [{"role": "user", "content": [text(""), text("real")]}]
    },
    # F25
    "anthropic-tool-name-pattern": {
        "messages": [{"role": "user", "content": [text("hi")]}],
        "tools": [{"name": "get weather", "input_schema": {"type": "object"}}],
    },
    # F24 (message text only in the source)
    "anthropic-tool-use-id-pattern": {
        "messages": [
            {"role": "user", "content": [text("go")]},
            {"role": "assistant", "content": [tool_use("call_a|fc_b", "a")]},
            {"role": "user", "content": [result("call_a|fc_b")]},
        ]
    },
    # F40
    "anthropic-thinking-block-missing": {
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": [text("go")]},
            {"role": "assistant", "content": [tool_use("t1", "a")]},
            {"role": "user", "content": [result("t1")]},
        ],
    },
    # F03a (older wording): text placed before the results
    "anthropic-tool-results-not-first": {
        "messages": [
            {"role": "user", "content": [text("go")]},
            {"role": "assistant", "content": [tool_use("t1", "a")]},
            {"role": "user", "content": [text("3 turns left"), result("t1")]},
        ]
    },
}


@pytest.mark.parametrize("entry_id", sorted(CASES))
def test_rule_breaks_get_the_real_error_text(entry_id: str) -> None:
    assert validate(CASES[entry_id]) == message_of(entry_id)


def test_valid_requests_pass() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "plain string content"},
            {"role": "assistant", "content": [text(" "), tool_use("t1", "a"), tool_use("t2", "a")]},
            {"role": "user", "content": [result("t1"), result("t2"), text("more")]},
            {"role": "assistant", "content": []},
        ]
    }
    assert validate(body) is None


async def test_a_400_reaches_the_caller_as_a_final_model_error() -> None:
    """A blank prompt still goes out valid (F20); a 400 is not retried: it cannot succeed."""
    with FakeAnthropic() as fake:  # no scripted reply: the fake answers 400
        model = model_for(fake)
        with pytest.raises(ModelError, match="no scripted reply left") as caught:
            await model.request(ModelRequest(None, (UserMessage("   "),), ()))
        await model.aclose()
    assert fake.rejections == []
    assert caught.value.retryable is False
    assert caught.value.status == 400
    assert len(fake.requests) == 1
