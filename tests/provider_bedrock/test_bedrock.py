"""`bedrock:MODEL` against the Bedrock stand-in, through the SDK's `AsyncAnthropicBedrock`.

The stand-in verifies bearer tokens and SigV4 signatures, Bedrock's body rules and Anthropic's
history rules, so every run here also proves the requests were valid (`fake.rejections == []`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provider_anthropic.anthropic_fake_server import (
    Reply,
    message,
    stream_events,
    text,
    thinking,
    tool_use,
)
from provider_bedrock.bedrock_fake_server import (
    ACCESS_KEY,
    MODEL_ID,
    REGION,
    SECRET_KEY,
    TOKEN,
    FakeBedrock,
    bedrock_error,
    model_for,
    stream_exception,
)
from steadyloop import (
    Agent,
    AssistantMessage,
    ConfigError,
    ContextLimitExceeded,
    ModelError,
    UserMessage,
    tool,
)
from steadyloop.events import Event, ModelRetry, RunFinished, TextDelta
from steadyloop.models import ModelRequest, resolve_model
from steadyloop.models.bedrock import OPENAI_RECIPE, BedrockModel
from steadyloop.retry import Backoff
from support.cli import run_cli

SPEC = f"bedrock:{MODEL_ID}"


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


def tool_loop() -> list[Reply]:
    return [
        message(text("Checking."), tool_use("toolu_1", "get_weather", {"city": "Paris"})),
        message(text("Paris is sunny.")),
    ]


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No AWS settings from the machine: no key, no profile, no files, no metadata server."""
    for name in (
        "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION",
        "AWS_DEFAULT_REGION", "ANTHROPIC_BEDROCK_BASE_URL", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # The SDK keeps one boto3 session (and the credentials it found) per set of arguments for
    # the life of the process: each test starts without one, so it reads this environment.
    from anthropic.lib.aws._auth import _get_session

    _get_session.cache_clear()  # type: ignore[attr-defined]
    return monkeypatch


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
async def test_a_tool_loop_runs_on_the_invoke_endpoints_with_a_bearer_token(
    aws_env: pytest.MonkeyPatch, streaming: bool
) -> None:
    with FakeBedrock(tool_loop()) as fake:
        async with Agent(model_for(fake), tools=[get_weather]) as agent:
            if streaming:
                events: list[Event] = [e async for e in agent.stream("weather in Paris?")]
                deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
                assert "Paris is sunny." in deltas
                result = next(e.result for e in events if isinstance(e, RunFinished))
            else:
                result = await agent.run("weather in Paris?")
    assert result.output == "Paris is sunny."
    assert fake.rejections == []
    action = "invoke-with-response-stream" if streaming else "invoke"
    assert [path.rsplit("/", 1)[1] for path in fake.paths] == [action, action]
    assert fake.models == [MODEL_ID, MODEL_ID]
    assert fake.auth == ["bearer", "bearer"]
    second = fake.requests[1]
    assert second["messages"][1]["content"][1]["id"] == "toolu_1"
    assert second["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"
    replies = [m for m in result.messages if isinstance(m, AssistantMessage)]
    assert [r.model for r in replies] == [SPEC, SPEC]
    cost = result.usage.cost_usd
    assert cost is not None
    assert cost > 0  # priced from the tables' Bedrock entries
    assert result.usage_by_model == {SPEC: result.usage.__class__(
        input_tokens=result.usage.input_tokens, output_tokens=result.usage.output_tokens,
        requests=2, cache_read_tokens=result.usage.cache_read_tokens,
        cache_write_tokens=result.usage.cache_write_tokens, cost_usd=cost,
    )}  # fmt: skip


async def test_requests_are_signed_with_sigv4_from_the_aws_credential_chain(
    aws_env: pytest.MonkeyPatch,
) -> None:
    aws_env.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    aws_env.setenv("AWS_REGION", REGION)
    with FakeBedrock(tool_loop()) as fake:
        async with Agent(BedrockModel(MODEL_ID, base_url=fake.url), tools=[get_weather]) as agent:
            result = await agent.run("weather in Paris?")
    assert result.output == "Paris is sunny."
    assert fake.auth == ["sigv4", "sigv4"]  # each signature verified by the stand-in
    assert fake.rejections == []


async def test_a_wrong_secret_key_is_a_config_error_after_one_request(
    aws_env: pytest.MonkeyPatch,
) -> None:
    aws_env.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with FakeBedrock(tool_loop()) as fake:
        model = BedrockModel(MODEL_ID, region=REGION, base_url=fake.url)
        async with Agent(model, model_retries=3, backoff=Backoff.none()) as agent:
            with pytest.raises(ConfigError, match="AWS_BEARER_TOKEN_BEDROCK") as caught:
                await agent.run("hi")
    assert "InvalidSignatureException" in str(caught.value)
    assert "not-the-secret" not in str(caught.value)
    assert fake.requests == []  # refused before the body was read as a request


async def test_a_rejected_bearer_token_is_a_config_error_that_never_quotes_it(
    aws_env: pytest.MonkeyPatch,
) -> None:
    with FakeBedrock(tool_loop()) as fake:
        model = BedrockModel(MODEL_ID, region=REGION, base_url=fake.url, api_key="wrong-token")
        async with Agent(model, model_retries=3, backoff=Backoff.none()) as agent:
            with pytest.raises(ConfigError, match="UnrecognizedClientException") as caught:
                await agent.run("hi")
    assert "wrong-token" not in str(caught.value)


async def test_no_credentials_anywhere_is_a_config_error_and_nothing_is_sent(
    aws_env: pytest.MonkeyPatch,
) -> None:
    with FakeBedrock(tool_loop()) as fake:
        model = BedrockModel(MODEL_ID, region=REGION, base_url=fake.url)
        with pytest.raises(ConfigError, match="AWS_BEARER_TOKEN_BEDROCK"):
            await model.request(ModelRequest(None, (UserMessage("hi"),), ()))
    assert fake.paths == []


def test_no_region_is_a_config_error_naming_aws_region(aws_env: pytest.MonkeyPatch) -> None:
    aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", TOKEN)
    with pytest.raises(ConfigError, match="AWS_REGION"):
        resolve_model(SPEC)


def test_a_model_that_is_not_claude_points_to_the_openai_compatible_recipe(
    aws_env: pytest.MonkeyPatch,
) -> None:
    aws_env.setenv("AWS_REGION", REGION)
    with pytest.raises(ConfigError) as caught:
        resolve_model("bedrock:openai.gpt-oss-120b-1:0")
    assert OPENAI_RECIPE in str(caught.value)


async def test_throttling_is_retried_and_a_stream_exception_frame_too(
    aws_env: pytest.MonkeyPatch,
) -> None:
    cut = stream_events(message(text("Paris is")).message or {})[:3]
    replies = [
        bedrock_error(429, "ThrottlingException", "Too many requests, please wait."),
        Reply(events=[*cut, stream_exception("throttlingException", "Too many tokens.")]),
        message(text("Paris is sunny.")),
    ]
    with FakeBedrock(replies) as fake:
        agent = Agent(model_for(fake), model_retries=2, backoff=Backoff.none())
        async with agent:
            events = [e async for e in agent.stream("weather?")]
    retries = [e for e in events if isinstance(e, ModelRetry)]
    assert [r.attempt for r in retries] == [2, 3]
    assert "ThrottlingException" in retries[0].error
    assert "throttlingException" in retries[1].error
    assert next(e.result for e in events if isinstance(e, RunFinished)).output == "Paris is sunny."


async def test_input_too_long_stops_the_run_at_its_context_limit(
    aws_env: pytest.MonkeyPatch,
) -> None:
    too_long = bedrock_error(400, "ValidationException", "Input is too long for requested model.")
    with FakeBedrock([too_long]) as fake:
        async with Agent(model_for(fake), model_retries=3, backoff=Backoff.none()) as agent:
            with pytest.raises(ContextLimitExceeded):
                await agent.run("hi")
    assert len(fake.requests) == 1


async def test_a_plain_validation_error_is_not_retried(aws_env: pytest.MonkeyPatch) -> None:
    bad = bedrock_error(400, "ValidationException", "temperature: range: 0..1")
    with FakeBedrock([bad]) as fake:
        async with Agent(model_for(fake), model_retries=3, backoff=Backoff.none()) as agent:
            with pytest.raises(ModelError, match="temperature") as caught:
                await agent.run("hi")
    assert not caught.value.retryable
    assert len(fake.requests) == 1


async def test_thinking_goes_back_to_bedrock_as_it_came(aws_env: pytest.MonkeyPatch) -> None:
    """With thinking on, the stand-in accepts only the reply's own signed thinking, sent back
    unchanged after the same prefix."""
    first = message(
        thinking("Look it up.", "sig-bedrock-1"),
        tool_use("toolu_1", "get_weather", {"city": "Oslo"}),
    )
    settings = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    with FakeBedrock([first, message(text("Oslo is sunny."))]) as fake:
        model = model_for(fake, settings=settings)
        async with Agent(model, tools=[get_weather]) as agent:
            result = await agent.run("weather in Oslo?")
    assert result.output == "Oslo is sunny."
    assert fake.rejections == []
    assert fake.requests[1]["messages"][1]["content"][0]["signature"] == "sig-bedrock-1"


def test_the_cli_runs_a_bedrock_model_spec(
    aws_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with FakeBedrock([message(text("Hello from Bedrock."))]) as fake:
        aws_env.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.url)
        aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", TOKEN)
        aws_env.setenv("AWS_REGION", REGION)
        store = str(tmp_path / "runs.db")
        code, out, err = run_cli(capsys, "run", "--model", SPEC, "--store", store, "--json", "hi")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["output"] == "Hello from Bedrock."
    assert fake.auth == ["bearer"]
