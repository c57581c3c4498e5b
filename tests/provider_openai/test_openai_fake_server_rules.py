"""The fake OpenAI server really enforces each history rule, with the providers' texts.

Without this, a passing end-to-end test could mean a lenient server rather than a correct
adapter. Each case sends one raw body through the official SDK and expects the real 400.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

from provider_openai.openai_fake_server import Dialect, FakeOpenAI, Reply

USER = {"role": "user", "content": "hi"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
FC = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
OUT = {"type": "function_call_output", "call_id": "c1", "output": "x"}

CASES: list[tuple[str, str, dict[str, Any], int, str]] = [
    (
        "F04",
        "/chat/completions",
        {"messages": [USER, {"role": "assistant", "content": "", "tool_calls": [CALL]}, USER]},
        400,
        "did not have response messages: call_1",
    ),
    (
        "F05",
        "/chat/completions",
        {"messages": [USER, {"role": "tool", "tool_call_id": "call_1", "content": "x"}]},
        400,
        "messages with role 'tool' must be a response to a preceeding message",
    ),
    (
        "F21",
        "/chat/completions",
        {"messages": [USER, {"role": "assistant", "content": "", "tool_calls": []}]},
        400,
        "empty array. Expected an array with minimum length 1",
    ),
    (
        "F24",
        "/chat/completions",
        {
            "messages": [
                USER,
                {"role": "assistant", "content": "", "tool_calls": [{**CALL, "id": "c" * 53}]},
                {"role": "tool", "tool_call_id": "c" * 53, "content": "x"},
            ]
        },
        400,
        "Expected a string with maximum length 40, but got a string with length 53",
    ),
    (
        "F25",
        "/chat/completions",
        {
            "messages": [USER],
            "tools": [{"type": "function", "function": {"name": "a.b", "parameters": {}}}],
        },
        400,
        "string does not match pattern",
    ),
    (
        "F39",
        "/chat/completions",
        {"messages": [USER], "parallel_tool_calls": False},
        400,
        "'parallel_tool_calls' is only allowed when 'tools' are specified",
    ),
    (
        "F42",
        "/chat/completions",
        {
            "messages": [
                USER,
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "call_1", "content": "x"},
            ],
            "tools": [TOOL],
        },
        500,
        "Input should be a valid string",
    ),
    ("F06", "/responses", {"input": [USER, FC]}, 400, "No tool output found for function call c1."),
    (
        "F05-responses",
        "/responses",
        {"input": [USER, OUT]},
        400,
        "No tool call found for function call output with call_id c1.",
    ),
    (
        "F07",
        "/responses",
        {"input": [USER, {"type": "reasoning", "id": "rs_1", "summary": []}, USER]},
        400,
        "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
    ),
    (
        "F08-duplicate",
        "/responses",
        {"input": [USER, {**FC, "id": "fc_1"}, OUT, {**FC, "id": "fc_1", "call_id": "c2"}]},
        400,
        "Duplicate item found with id fc_1.",
    ),
    (
        "F08-prefix",
        "/responses",
        {"input": [USER, {**FC, "id": "call_1"}, OUT]},
        400,
        "Expected an ID that begins with 'fc'.",
    ),
]


@pytest.mark.parametrize(("case", "path", "body", "status", "text"), CASES)
async def test_fake_server_rejects_what_the_provider_rejects(
    case: str, path: str, body: dict[str, Any], status: int, text: str
) -> None:
    with FakeOpenAI() as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0)
        with pytest.raises(openai.APIStatusError) as info:
            await client.post(path, body={"model": "m", **body}, cast_to=object)
        await client.close()
    assert info.value.status_code == status
    assert text in str(info.value.message), case


REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}
ASKED = {"role": "assistant", "content": "", "tool_calls": [CALL]}
ANSWERED = {"role": "tool", "tool_call_id": "call_1", "content": "x"}
REASONING_CASES: list[tuple[str, Dialect, str, dict[str, Any], int, str]] = [
    (
        "id-only reasoning under store false",
        Dialect(),
        "/responses",
        {"model": "gpt-5", "store": False, "input": [USER, REASONING, FC, OUT]},
        404,
        "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false.",
    ),
    (
        "encrypted reasoning asked of a model that does not reason",
        Dialect(),
        "/responses",
        {"model": "gpt-4o", "include": ["reasoning.encrypted_content"], "input": [USER]},
        400,
        "Encrypted content is not supported with this model.",
    ),
    (
        "encrypted content this server did not issue",
        Dialect(),
        "/responses",
        {
            "model": "gpt-5",
            "store": False,
            "input": [USER, {**REASONING, "encrypted_content": "forged"}, FC, OUT],
        },
        400,
        "The encrypted content for item rs_1 could not be verified.",
    ),
    (
        "Mistral's ids",
        Dialect(nine_char_ids=True),
        "/chat/completions",
        {"model": "mistral-large", "messages": [USER, ASKED, ANSWERED]},
        400,
        "Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9.",
    ),
]


@pytest.mark.parametrize(("case", "dialect", "path", "body", "status", "text"), REASONING_CASES)
async def test_fake_server_refuses_reasoning_the_provider_refuses(
    case: str, dialect: Dialect, path: str, body: dict[str, Any], status: int, text: str
) -> None:
    with FakeOpenAI(dialect=dialect) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0)
        with pytest.raises(openai.APIStatusError) as info:
            await client.post(path, body=body, cast_to=object)
        await client.close()
    assert info.value.status_code == status
    assert text in str(info.value.message), case


@pytest.mark.parametrize(
    ("dialect", "text"),
    [
        (
            Dialect(reasoning_key="reasoning_content"),
            "The reasoning_content in the thinking mode must be passed back to the API.",
        ),
        (
            Dialect(thought_signatures=True),
            "Function call is missing a thought_signature in functionCall parts",
        ),
    ],
)
async def test_fake_server_refuses_its_reply_sent_back_without_its_reasoning(
    dialect: Dialect, text: str
) -> None:
    """The server's own reply made a call with reasoning (or a signature); the follow-up that
    sends the call back without it is refused."""
    with FakeOpenAI(dialect=dialect) as server:
        server.queue(Reply(reasoning="hm", calls=[("call_1", "f", "{}")]))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0)
        path = "/chat/completions"
        await client.post(path, body={"model": "m", "messages": [USER]}, cast_to=object)
        follow_up = {"model": "m", "messages": [USER, ASKED, ANSWERED]}
        with pytest.raises(openai.APIStatusError) as info:
            await client.post(path, body=follow_up, cast_to=object)
        await client.close()
    assert info.value.status_code == 400
    assert text in str(info.value.message)
