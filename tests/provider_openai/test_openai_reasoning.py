"""Reasoning models through the official SDK against stand-ins as strict as the providers.

Each stand-in refuses a history the way its provider does (the 404 for an id-only reasoning item
under `store: false`, DeepSeek's missing `reasoning_content`, Gemini's missing thought
signature, Mistral's 9-character ids), so a run that succeeds proves each reply went back as
its provider requires: verbatim to the same endpoint and model, as text and calls elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from provider_openai.openai_fake_server import Dialect, FakeOpenAI, Reply
from steadyloop import Agent, tool
from steadyloop.events import RunFinished
from steadyloop.messages import (
    AssistantMessage,
    Message,
    Native,
    ToolCall,
    ToolResult,
    UserMessage,
)
from steadyloop.models.openai_base import OpenAIModel
from steadyloop.models.openai_chat import OpenAIChatModel
from steadyloop.models.openai_responses import OpenAIResponsesModel
from steadyloop.replay import replay_run
from steadyloop.result import RunResult
from steadyloop.retry import Backoff
from steadyloop.store import RunStore

KILLED_RUN = Path(__file__).resolve().parent / "openai_killed_run.py"
DEEPSEEK = Dialect(reasoning_key="reasoning_content")
OLLAMA = Dialect(reasoning_key="reasoning")
GEMINI = Dialect(thought_signatures=True)
MISTRAL = Dialect(nine_char_ids=True)
LITELLM_ID = "call_3f2a9c1e__thought__" + "Q" * 56  # a proxy's id with a signature in it


@tool(idempotent=True)
def lookup(day: str) -> str:
    """Looks up a day in the calendar."""
    return f"{day}: free"


def model_for(server: FakeOpenAI, api: str, name: str) -> OpenAIModel:
    cls: type[OpenAIModel] = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    return cls(name, base_url=server.base_url, api_key=server.api_key)


async def run(model: OpenAIModel, prompt: str, streaming: bool, **options: Any) -> RunResult[Any]:
    agent = Agent(model, tools=[lookup], backoff=Backoff.none(), model_retries=0)
    try:
        if not streaming:
            result: RunResult[Any] = await agent.run(prompt, **options)
            return result
        last = None
        async for event in agent.stream(prompt, **options):
            last = event
        assert isinstance(last, RunFinished)
        return last.result
    finally:
        await model.aclose()


def tool_loop() -> list[Reply]:
    """Two turns of calls, each with its reasoning (the first with two parallel calls), then
    the answer."""
    return [
        Reply(
            reasoning="Two days to check.",
            calls=[("call_a", "lookup", '{"day": "mon"}'), ("call_b", "lookup", '{"day": "tue"}')],
        ),
        Reply(reasoning="Now Wednesday.", calls=[("call_c", "lookup", '{"day": "wed"}')]),
        Reply(reasoning="All free.", text="All three are free."),
    ]


def replies(result: RunResult[Any]) -> list[AssistantMessage]:
    return [m for m in result.messages if isinstance(m, AssistantMessage)]


@pytest.mark.parametrize("streaming", [False, True])
async def test_responses_reasoning_model_gets_its_encrypted_reasoning_back(
    streaming: bool,
) -> None:
    """gpt-5 without `reasoning=`: encrypted reasoning is asked for, and each follow-up carries
    the reply's items in order, reasoning whole, calls without their server ids."""
    with FakeOpenAI() as server:
        server.queue(*tool_loop())
        result = await run(model_for(server, "responses", "gpt-5"), "free days?", streaming)
    assert result.output == "All three are free."
    assert server.rejected == []
    assert all(body["include"] == ["reasoning.encrypted_content"] for body in server.requests)
    second = server.requests[1]["input"]
    assert [i.get("type", i.get("role")) for i in second] == [
        "user",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert second[1]["encrypted_content"] == server.issued_reasoning[second[1]["id"]]
    assert all("id" not in item for item in second if item.get("type") == "function_call")
    first = replies(result)[0]
    assert first.reasoning_text == "Two days to check."
    assert first.native is not None
    assert first.native.api == "openai-responses"
    assert first.native.model == "gpt-5"
    assert "Two days" not in json.dumps(server.requests[1]["input"][2:])  # never sent as text


async def test_a_model_that_does_not_reason_is_not_asked_for_encrypted_reasoning() -> None:
    with FakeOpenAI() as server:
        server.queue(Reply(text="hi"))
        result = await run(model_for(server, "responses", "gpt-4.1-mini"), "hi", False)
    assert result.output == "hi"
    assert server.rejected == []
    assert "include" not in server.requests[0]


async def test_a_reply_whose_reasoning_came_without_encrypted_content_goes_without_it() -> None:
    """An id alone is the provider's 404 under `store: false`: the reply's reasoning stays
    out, its call goes back without the server's item id."""
    with FakeOpenAI() as server:
        model = model_for(server, "responses", "gpt-5")
        output = [
            {"type": "reasoning", "id": "rs_gone", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "lookup",
             "arguments": '{"day": "mon"}'},
        ]  # fmt: skip
        native = Native("openai-responses", model.origin.endpoint, "gpt-5", output)
        history: list[Message] = [
            UserMessage("mon?"),
            AssistantMessage(
                tool_calls=(ToolCall("c1", "lookup", '{"day": "mon"}'),), native=native
            ),
            ToolResult("c1", "lookup", "mon: free"),
        ]
        server.queue(Reply(text="free"))
        result = await run(model, "and now?", False, history=history)
    assert result.output == "free"
    assert server.rejected == []
    sent = json.dumps(server.requests[0]["input"])
    assert "rs_gone" not in sent
    assert "fc_1" not in sent


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(
    "dialect", [DEEPSEEK, OLLAMA, GEMINI], ids=["reasoning_content", "reasoning", "signatures"]
)
async def test_chat_reasoning_servers_get_their_reasoning_and_signatures_back(
    dialect: Dialect, streaming: bool
) -> None:
    """DeepSeek's `reasoning_content`, Ollama's `reasoning` and Gemini's thought signature
    (first call of a parallel set only) go back on every reply of the tool loop."""
    with FakeOpenAI(dialect=dialect) as server:
        server.queue(*tool_loop())
        result = await run(model_for(server, "chat", "thinker"), "free days?", streaming)
    assert server.rejected == []
    assert result.output == "All three are free."
    last = server.requests[-1]["messages"]
    calls = [m for m in last if m["role"] == "assistant"]
    if dialect.reasoning_key:
        key = dialect.reasoning_key
        assert [m[key] for m in calls] == ["Two days to check.", "Now Wednesday."]
        assert replies(result)[0].reasoning_text == "Two days to check."
    else:
        first = calls[0]["tool_calls"]
        assert first[0]["extra_content"] == {"google": {"thought_signature": "sig-call_a"}}
        assert "extra_content" not in first[1]
    assert [c["id"] for m in calls for c in m["tool_calls"]] == ["call_a", "call_b", "call_c"]


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_id_the_endpoint_made_goes_back_unchanged(streaming: bool) -> None:
    """A proxy that encodes a signature in an 80-character call id gets it back as it was."""
    with FakeOpenAI() as server:
        server.queue(
            Reply(calls=[(LITELLM_ID, "lookup", '{"day": "mon"}')]), Reply(text="Monday is free.")
        )
        result = await run(model_for(server, "chat", "gemini-3-pro"), "mon?", streaming)
    assert server.rejected == []
    assert result.output == "Monday is free."
    sent = server.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == LITELLM_ID
    assert sent[2]["tool_call_id"] == LITELLM_ID


async def test_foreign_ids_reach_mistral_as_nine_letters_and_digits_the_same_every_time() -> None:
    """Ids from other providers are mapped to Mistral's rule, in the call and its result alike,
    and to the same id in every request; Mistral's own ids are kept."""
    history: list[Message] = [
        UserMessage("first"),
        AssistantMessage(
            tool_calls=(
                ToolCall("toolu_01A09q90qw90lq917835lq9", "lookup", '{"day": "mon"}'),
                ToolCall("functions.lookup:0", "lookup", '{"day": "tue"}'),
            )
        ),
        ToolResult("toolu_01A09q90qw90lq917835lq9", "lookup", "mon: free"),
        ToolResult("functions.lookup:0", "lookup", "tue: free"),
        AssistantMessage("Both free."),
    ]
    with FakeOpenAI(dialect=MISTRAL) as server:
        server.queue(
            Reply(calls=[("Ab3dE5gH9", "lookup", '{"day": "wed"}')]), Reply(text="Wed is free.")
        )
        result = await run(
            model_for(server, "chat", "mistral-large"), "wed?", False, history=history
        )
    assert server.rejected == []
    assert result.output == "Wed is free."
    first, second = server.requests
    assert first["messages"][:5] == second["messages"][:5]  # the same wire ids both times
    ids = [c["id"] for c in second["messages"][1]["tool_calls"]]
    assert all(len(i) == 9 and i.isalnum() for i in ids)
    assert [m["tool_call_id"] for m in second["messages"][2:4]] == ids
    assert second["messages"][6]["tool_calls"][0]["id"] == "Ab3dE5gH9"
    assert result.messages[: len(history)] == tuple(history)  # the transcript keeps originals


async def test_a_history_moves_between_providers_without_their_reasoning() -> None:
    """A Responses run's history continued on a DeepSeek-like Chat server, then back on another
    model of the same Responses endpoint: no reasoning, encrypted content or extra reaches a
    server that did not make it (the stand-ins refuse content they did not issue)."""
    with FakeOpenAI() as openai_server, FakeOpenAI(dialect=DEEPSEEK) as deepseek:
        openai_server.queue(*tool_loop())
        first = await run(model_for(openai_server, "responses", "gpt-5"), "free days?", False)
        deepseek.queue(
            Reply(reasoning="Thursday next.", calls=[("call_d", "lookup", '{"day": "thu"}')]),
            Reply(text="Thursday too."),
        )
        history = list(first.messages)
        second = await run(model_for(deepseek, "chat", "deepseek-reasoner"), "thu?", False,
                           history=history)  # fmt: skip
        openai_server.queue(Reply(reasoning="Friday.", text="Friday too."))
        third = await run(model_for(openai_server, "responses", "gpt-5-mini"), "fri?", False,
                          history=list(second.messages))  # fmt: skip
    assert openai_server.rejected == deepseek.rejected == []
    assert third.output == "Friday too."
    to_deepseek = json.dumps(deepseek.requests)
    assert "Two days" not in to_deepseek
    assert "enc." not in to_deepseek
    assert "rs_" not in to_deepseek
    back = json.dumps(openai_server.requests[-1])
    assert "Thursday next" not in back  # DeepSeek's reasoning
    assert '"type": "reasoning"' not in back  # gpt-5's reasoning does not go to gpt-5-mini
    deepseek_reply = replies(second)[-2]
    assert deepseek_reply.native is not None
    assert deepseek_reply.native.content["reasoning_content"] == "Thursday next."


@pytest.mark.parametrize(
    ("api", "dialect", "name"),
    [("responses", Dialect(), "gpt-5"), ("chat", DEEPSEEK, "deepseek-reasoner")],
)
async def test_a_run_killed_between_turns_resumes_sending_the_logged_reply_exactly(
    tmp_path: Path, api: str, dialect: Dialect, name: str
) -> None:
    """The process dies while the reply's call runs; the resumed run sends that reply from
    the log exactly as received, reasoning included, and the stand-in accepts it. The run's
    export, imported elsewhere, equals it, and a replay finds no divergence."""
    store = tmp_path / "runs.db"
    with FakeOpenAI(dialect=dialect) as server:
        server.queue(
            Reply(reasoning="Check Monday.", calls=[("call_m", "lookup", '{"day": "mon"}')])
        )
        process = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, str(KILLED_RUN), str(store), server.base_url, api, name],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert process.returncode == -signal.SIGKILL, process.stderr
        log = RunStore(store)
        (info,) = log.runs()
        logged = log.messages(info.id)[-1]
        assert isinstance(logged, AssistantMessage)
        assert logged.native is not None
        assert logged.reasoning_text == "Check Monday."
        server.queue(Reply(text="Monday is free."))
        agent = Agent(model_for(server, api, name), tools=[lookup], store=log)
        result = await agent.resume(info.id)
        await agent.aclose()
    assert server.rejected == []
    assert result.output == "Monday is free."
    follow_up = server.requests[-1]
    if api == "responses":
        reasoning = follow_up["input"][1]
        assert reasoning == {k: v for k, v in logged.native.content[0].items() if k != "status"}
    else:
        assert follow_up["messages"][1]["reasoning_content"] == "Check Monday."
    other = RunStore(tmp_path / "other.db")
    other.from_jsonl(list(log.to_jsonl(info.id)))
    assert other.messages(info.id) == log.messages(info.id)
    report = await replay_run(other, info.id, [lookup])
    assert report.divergence is None
    other.close()
    log.close()
