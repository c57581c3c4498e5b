"""Prompt caching on the OpenAI APIs, through the official SDK: a stable `prompt_cache_key`, and
a request prefix that does not move from one request to the next, within a run and across runs
that continue a history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from provider_openai.conftest import MakeModel
from provider_openai.openai_fake_server import FakeOpenAI, Reply
from steadyloop import Agent, Cache, tool
from steadyloop.messages import UserMessage
from steadyloop.models.base import ModelRequest
from steadyloop.models.openai_base import OpenAIModel
from steadyloop.models.openai_chat import OpenAIChatModel, chat_cache_key
from steadyloop.models.openai_responses import OpenAIResponsesModel
from steadyloop.retry import Backoff


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def get_time(city: str) -> str:
    """The time in a city."""
    return f"noon in {city}"


def agent_for(model: Any, **options: Any) -> Agent:
    options.setdefault("instructions", "Be brief.")
    options.setdefault("tools", [get_weather, get_time])
    return Agent(model, backoff=Backoff.none(), **options)


def loop_script(server: FakeOpenAI) -> None:
    server.queue(
        Reply(calls=[("call_a", "get_weather", '{"city": "Oslo"}')], reasoning="weather first"),
        Reply(calls=[("call_b", "get_time", '{"city": "Oslo"}')], reasoning="then the time"),
        Reply(text="Sunny at noon."),
        Reply(calls=[("call_c", "get_weather", '{"city": "Rome"}')], reasoning="now Rome"),
        Reply(text="Sunny too."),
    )


def begins_with(later: dict[str, Any], earlier: dict[str, Any], api: str) -> None:
    """`later` starts with `earlier`'s content: same tools in the same order, same instructions,
    every earlier item's JSON unchanged."""
    key = "messages" if api == "chat" else "input"
    assert later.get("tools") == earlier.get("tools")
    assert later.get("instructions") == earlier.get("instructions")
    assert later[key][: len(earlier[key])] == earlier[key]


async def test_each_request_begins_with_the_one_before_within_and_across_runs(
    server: FakeOpenAI, api: str, make_model: MakeModel
) -> None:
    loop_script(server)
    agent = agent_for(make_model())
    first = await agent.run("weather and time in Oslo?")
    await agent.run("and Rome?", history=first.messages)
    assert server.rejected == []
    assert len(server.requests) == 5
    for earlier, later in zip(server.requests, server.requests[1:], strict=False):
        begins_with(later, earlier, api)
    names = [t.get("name") or t["function"]["name"] for t in server.requests[0]["tools"]]
    assert names == ["get_weather", "get_time"]  # the agent's order


def made(server: FakeOpenAI, cls: type[OpenAIModel]) -> Callable[[], OpenAIModel]:
    return lambda: cls("gpt-test", base_url=server.base_url, api_key=server.api_key)


async def test_responses_sends_one_key_for_every_run_of_an_agent_and_its_twins(
    server: FakeOpenAI,
) -> None:
    make_model = made(server, OpenAIResponsesModel)
    loop_script(server)
    first = await agent_for(make_model()).run("weather and time in Oslo?")
    await agent_for(make_model()).run("and Rome?", history=first.messages)
    keys = {body["prompt_cache_key"] for body in server.requests}
    assert len(keys) == 1
    (key,) = keys
    assert 0 < len(key) <= 64
    server.queue(Reply(text="ok"), Reply(text="ok"), Reply(text="ok"))
    await agent_for(make_model(), instructions="Be verbose.").run("hi")
    await agent_for(make_model(), tools=[get_weather]).run("hi")
    await agent_for(make_model(), cache=Cache(key=None)).run("hi")
    assert server.requests[-3]["prompt_cache_key"] not in (key, None)
    assert server.requests[-2]["prompt_cache_key"] not in (
        key,
        server.requests[-3]["prompt_cache_key"],
    )
    assert "prompt_cache_key" not in server.requests[-1]


async def test_chat_sends_the_derived_key_only_to_openai_and_a_given_key_anywhere(
    server: FakeOpenAI,
) -> None:
    make_model = made(server, OpenAIChatModel)
    server.queue(Reply(text="ok"), Reply(text="ok"))
    await agent_for(make_model()).run("hi")
    await agent_for(make_model(), cache=Cache(key="support-bot")).run("hi")
    assert "prompt_cache_key" not in server.requests[0]
    assert server.requests[1]["prompt_cache_key"] == "support-bot"
    auto = ModelRequest(None, (UserMessage("hi"),), (), Cache(), "derived")
    assert chat_cache_key(auto, "https://api.openai.com/v1/") == "derived"
    assert chat_cache_key(auto, "https://api.mistral.ai/v1") is None
    off = ModelRequest(None, (UserMessage("hi"),), (), None, None)
    assert chat_cache_key(off, "https://api.openai.com/v1") is None
