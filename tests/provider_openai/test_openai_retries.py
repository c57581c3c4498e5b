"""One retry layer: the loop retries a failed model call, the SDK does not retry it again.

Each test runs against Chat Completions and Responses through the official SDK, counting the
requests the fake server saw.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from email.utils import formatdate
from pathlib import Path
from time import time

import pytest
from openai_fake_server import Drop, Fail, FakeOpenAI, Reply, rate_limit_body

from steadyloop import Agent
from steadyloop.errors import ModelError
from steadyloop.models.openai_chat import OpenAIChatModel, OpenAIModel
from steadyloop.models.openai_responses import OpenAIResponsesModel
from steadyloop.retry import Backoff

UNAVAILABLE = {"error": {"message": "Service Unavailable", "type": "server_error"}}


def default_model(api: str, base_url: str, api_key: str = "sk-test") -> OpenAIModel:
    """The adapter as a user makes it: no retry settings of its own."""
    cls = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    return cls("gpt-test", base_url=base_url, api_key=api_key)


async def test_a_persistent_503_costs_one_request_plus_the_loops_retries(
    server: FakeOpenAI, api: str
) -> None:
    server.queue(*[Fail(503, UNAVAILABLE)] * 10)
    async with Agent(default_model(api, server.base_url), backoff=Backoff.none()) as agent:
        with pytest.raises(ModelError, match="Service Unavailable") as info:
            await agent.run("hi")
    assert info.value.retryable
    assert len(server.requests) == 3  # model_retries=2 by default; not 3 x 3


async def test_the_error_after_the_last_retry_does_not_promise_another(
    server: FakeOpenAI, api: str
) -> None:
    server.queue(Drop(), Drop(), Drop())
    async with Agent(default_model(api, server.base_url), backoff=Backoff.none()) as agent:
        with pytest.raises(ModelError) as info:
            async for _ in agent.stream("go"):
                pass
    assert len(server.requests) == 3
    assert "retry" not in str(info.value)

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    async with Agent(default_model(api, closed), backoff=Backoff.none()) as agent:
        with pytest.raises(ModelError, match="Connection error") as refused:
            await agent.run("hi")
    assert "retry" not in str(refused.value)


IN_30_SECONDS = "an HTTP date 30 s ahead"  # made when the test runs, not when it is collected


def sent(headers: dict[str, str]) -> dict[str, str]:
    return {
        k: formatdate(time() + 30, usegmt=True) if v == IN_30_SECONDS else v
        for k, v in headers.items()
    }


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        ({"retry-after-ms": "1500"}, 1.5, 1.5),
        ({"Retry-After": "2"}, 2.0, 2.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25, 0.25),
        ({"retry-after": IN_30_SECONDS}, 20.0, 31.0),
        ({"retry-after": "soon"}, None, None),
    ],
)
async def test_retry_after_is_read_in_seconds_milliseconds_or_as_a_date(
    server: FakeOpenAI,
    api: str,
    headers: dict[str, str],
    low: float | None,
    high: float | None,
) -> None:
    server.queue(Fail(429, rate_limit_body(), sent(headers)))
    cls = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls("gpt-test", base_url=server.base_url, api_key="sk-test", max_retries=0)
    async with Agent(model, backoff=Backoff.none(), model_retries=0) as agent:
        with pytest.raises(ModelError) as info:
            await agent.run("hi")
    wait = info.value.retry_after
    if low is None:
        assert wait is None
    else:
        assert wait is not None
        assert low <= wait <= (high or low)


def test_retries_print_nothing_when_the_application_configured_no_logging(
    tmp_path: Path,
) -> None:
    """A model call retried twice and a tool retried once, in a fresh interpreter whose
    logging is not configured: stderr stays empty (no library's retry log line)."""
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from openai_fake_server import Fail, FakeOpenAI, Reply
            from steadyloop import Agent, tool
            from steadyloop.models.openai_chat import OpenAIChatModel
            from steadyloop.retry import Backoff

            failures = [ConnectionError("flaky")]

            @tool(retries=1)
            def flaky() -> str:
                \"\"\"Fails once.\"\"\"
                if failures:
                    raise failures.pop()
                return "fine"

            unavailable = Fail(503, {UNAVAILABLE!r})
            with FakeOpenAI() as server:
                server.queue(Reply(calls=[("call_1", "flaky", "{{}}")]), unavailable, unavailable)
                server.queue(Reply(text="done"))
                model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="sk-test")
                agent = Agent(model, tools=[flaky], backoff=Backoff.none())
                print(agent.run_sync("go").output)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert done.stderr == ""


async def test_an_sdk_retry_can_still_be_asked_for(server: FakeOpenAI, api: str) -> None:
    """`max_retries` defaults to 0 and still works when set."""
    server.queue(Fail(503, UNAVAILABLE), Reply(text="ok"))
    cls = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls("gpt-test", base_url=server.base_url, api_key="sk-test", max_retries=1)
    async with Agent(model, backoff=Backoff.none(), model_retries=0) as agent:
        assert (await agent.run("hi")).output == "ok"
    assert len(server.requests) == 2
