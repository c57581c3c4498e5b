"""Model settings: from the command line to the wire, and only where the API accepts them."""

from __future__ import annotations

import json
import socket

import pytest

from provider_openai.conftest import MakeModel
from provider_openai.openai_fake_server import FakeOpenAI, Reply
from steadyloop import Agent, ModelError, tool
from steadyloop.cli import main
from steadyloop.events import ModelRequestStarted
from steadyloop.retry import Backoff


@tool
def lookup(order: str) -> str:
    """Looks an order up."""
    return f"order {order}: open"


async def test_tool_only_settings_are_left_out_of_requests_without_tools(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    settings = {"tool_choice": "required", "parallel_tool_calls": False, "temperature": 0}
    server.queue(Reply(text="no tools needed"))
    result = await Agent(make_model(settings=settings)).run("hello")
    assert result.output == "no tools needed"
    (sent,) = server.requests
    assert "tool_choice" not in sent
    assert "parallel_tool_calls" not in sent
    assert sent["temperature"] == 0
    # With tools they are sent as given.
    server.queue(Reply(calls=[("c1", "lookup", '{"order": "7"}')]), Reply(text="done"))
    await Agent(make_model(settings=settings), tools=[lookup]).run("order 7?")
    assert server.requests[1]["tool_choice"] == "required"


def test_set_sends_each_setting_with_every_request(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
    server.queue(Reply(text="fine"))
    code = main(
        ["run", "--no-log", "--model", "openai:gpt-test", "--set", "temperature=0",
         "--set", "max_tokens=64", "--set", 'response_format={"type": "text"}',
         "--set", "user=alice", "hello"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    (sent,) = server.requests
    assert (sent["temperature"], sent["max_tokens"], sent["user"]) == (0, 64, "alice")
    assert sent["response_format"] == {"type": "text"}


def test_set_without_an_equals_sign_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--model", "test", "--set", "temperature", "hi"]) == 2
    assert "'temperature' is not KEY=VALUE" in capsys.readouterr().err


async def test_a_server_that_is_down_is_named_by_its_url(make_model: MakeModel) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    agent = Agent(make_model(base_url=base_url), model_retries=0, backoff=Backoff.none())
    with pytest.raises(ModelError) as failure:
        await agent.run("hello")
    assert base_url in str(failure.value)


def test_a_server_that_sends_no_usage_shows_tokens_as_unknown(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
    server.queue(Reply(text="fine", usage=None))
    code = main(["run", "--no-log", "--json", "--model", "openai:gpt-test", "hello"])
    assert code == 0, capsys.readouterr().err
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert usage["total_tokens"] is None
    assert (usage["input_tokens"], usage["output_tokens"]) == (None, None)
    assert (usage["requests"], usage["unreported"]) == (1, 1)


async def test_without_reported_usage_the_context_size_comes_from_the_estimate(
    server: FakeOpenAI, make_model: MakeModel
) -> None:
    server.queue(
        Reply(calls=[("c1", "lookup", '{"order": "7"}')], usage=None), Reply("done", usage=None)
    )
    sizes: list[int] = []

    def record(event: object) -> None:
        if isinstance(event, ModelRequestStarted):
            sizes.append(event.context_tokens)

    result = await Agent(make_model(), tools=[lookup]).run("order 7?", on_event=record)
    assert result.output == "done"
    first, second = sizes
    assert 0 < first < second  # the estimate grows with the call and its result
    assert result.usage.total_tokens is None
