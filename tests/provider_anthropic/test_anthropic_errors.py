"""Error mapping (F34, F35, F36) and set-up errors: what a caller of `AnthropicModel` sees."""

from __future__ import annotations

import json
import socket
import sys
from email.utils import formatdate
from time import time
from typing import Any

import anthropic
import pytest

from provider_anthropic.anthropic_cassettes import sse_events, transcribed
from provider_anthropic.anthropic_fake_server import FakeAnthropic, Reply, message, model_for, text
from steadyloop.errors import ConfigError, ContextWindowExceeded, ModelError, SteadyloopError
from steadyloop.messages import UserMessage
from steadyloop.models import resolve_model
from steadyloop.models.anthropic import AnthropicModel, error_from_response, from_spec
from steadyloop.models.base import ModelRequest

REQUEST = ModelRequest(None, (UserMessage("hi"),), ())


def body(kind: str, text_: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text_}}


@pytest.mark.parametrize(
    ("status", "kind", "text_", "expected", "retryable"),
    [
        (429, "rate_limit_error", "would exceed the rate limit", ModelError, True),
        (529, "overloaded_error", "Overloaded", ModelError, True),
        (500, "api_error", "Internal server error", ModelError, True),
        (503, "api_error", "unavailable", ModelError, True),
        (200, "overloaded_error", "Overloaded", ModelError, True),
        (200, "invalid_request_error", "bad block", ModelError, False),
        (400, "invalid_request_error", "messages.0: Input does not match", ModelError, False),
        (402, "billing_error", "credit balance too low", ModelError, False),
        (401, "authentication_error", "invalid x-api-key", ConfigError, False),
        (403, "permission_error", "not allowed", ConfigError, False),
        (404, "not_found_error", "model: claude-nope", ConfigError, False),
        (
            413,
            "request_too_large",
            "Request exceeds the maximum size",
            ContextWindowExceeded,
            False,
        ),
    ],
)
def test_status_and_type_decide_the_error(
    status: int, kind: str, text_: str, expected: type[SteadyloopError], retryable: bool
) -> None:
    mapped = error_from_response(status, body(kind, text_), {}, model="anthropic:m")
    assert type(mapped) is expected
    assert text_ in str(mapped)
    assert "anthropic:m" in str(mapped)
    if isinstance(mapped, ModelError):
        assert mapped.retryable is retryable
        assert mapped.provider == "anthropic"


def test_rejected_key_says_what_to_do() -> None:
    mapped = error_from_response(401, body("authentication_error", "invalid x-api-key"))
    for hint in ("ANTHROPIC_API_KEY", "api_key=", "--model test"):
        assert hint in str(mapped)


@pytest.mark.parametrize(
    ("text_", "limit"),
    [
        ("prompt is too long: 208310 tokens > 200000 maximum", 200_000),
        (
            "input length and `max_tokens` exceed context limit: 189136 + 20000 > 204648, "
            "decrease input length or `max_tokens` and try again",
            204_648,
        ),
        ("prompt is too long", None),
    ],
)
def test_context_errors_carry_the_limit(text_: str, limit: int | None) -> None:
    """F34."""
    mapped = error_from_response(400, body("invalid_request_error", text_))
    assert isinstance(mapped, ContextWindowExceeded)
    assert mapped.limit == limit
    assert not mapped.retryable


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"Retry-After": "0.5"}, 0.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_from_the_headers(headers: dict[str, str], wait: float | None) -> None:
    """F35."""
    mapped = error_from_response(429, body("rate_limit_error", "slow down"), headers)
    assert isinstance(mapped, ModelError)
    assert mapped.retry_after == wait


def test_retry_after_as_a_date() -> None:
    headers = {"retry-after": formatdate(time() + 30, usegmt=True)}
    mapped = error_from_response(529, body("overloaded_error", "Overloaded"), headers)
    assert isinstance(mapped, ModelError)
    assert mapped.retry_after is not None
    assert 20 < mapped.retry_after <= 31


def test_non_json_error_body_is_quoted() -> None:
    mapped = error_from_response(502, "<html>Bad Gateway</html>")
    assert isinstance(mapped, ModelError)
    assert mapped.retryable
    assert "Bad Gateway" in str(mapped)


TRANSCRIBED: dict[str, tuple[type[ModelError], bool]] = {
    "anthropic-tool-use-without-result": (ModelError, False),
    "anthropic-tool-result-without-use": (ModelError, False),
    "anthropic-tool-result-without-use-at-head": (ModelError, False),
    "anthropic-duplicate-tool-use-ids": (ModelError, False),
    "anthropic-empty-message": (ModelError, False),
    "anthropic-whitespace-text-block": (ModelError, False),
    "anthropic-empty-text-block": (ModelError, False),
    "anthropic-prompt-too-long": (ContextWindowExceeded, False),
    "anthropic-input-plus-max-tokens-too-long": (ContextWindowExceeded, False),
    "anthropic-overloaded": (ModelError, True),
    "anthropic-rate-limit": (ModelError, True),
    "anthropic-thinking-block-missing": (ModelError, False),
    "anthropic-tool-name-pattern": (ModelError, False),
}


@pytest.mark.parametrize("entry_id", sorted(TRANSCRIBED))
async def test_transcribed_error_bodies_through_the_sdk(entry_id: str) -> None:
    """Each real error body, served with its status, reaches the caller as the right error."""
    entry = transcribed(entry_id)
    expected, retryable = TRANSCRIBED[entry_id]
    reply = Reply(status=entry["http_status"], body=json.loads(entry["body"]))
    with FakeAnthropic([reply]) as fake:
        model = model_for(fake, max_retries=0)
        with pytest.raises(expected) as caught:
            await model.request(REQUEST)
        await model.aclose()
    assert type(caught.value) is expected
    assert caught.value.retryable is retryable
    assert json.loads(entry["body"])["error"]["message"] in str(caught.value)


async def test_transcribed_overload_inside_a_stream() -> None:
    """F36: the error event the API sends after a 200, mid-stream."""
    (event,) = sse_events(transcribed("anthropic-overloaded-mid-stream")["body"])
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 5}}}
    with FakeAnthropic([Reply(events=[start, event], broken=True)]) as fake:
        model = model_for(fake)
        with pytest.raises(ModelError) as caught:
            _ = [part async for part in model.stream(REQUEST)]
        await model.aclose()
    assert caught.value.retryable
    assert "Overloaded" in str(caught.value)
    assert len(fake.requests) == 1  # the SDK's retries cover the request, not the stream


async def test_unreachable_server_is_retryable_and_named_by_its_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = AnthropicModel("m", base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0)
    with pytest.raises(ModelError) as caught:
        await model.request(REQUEST)
    await model.aclose()
    assert caught.value.retryable
    assert f"http://127.0.0.1:{port}" in str(caught.value)
    assert isinstance(caught.value.__cause__, anthropic.APIConnectionError)


async def test_slow_server_times_out_as_retryable() -> None:
    with FakeAnthropic([Reply(message=message(text("late")).message, delay=2.0)]) as fake:
        model = model_for(fake, max_retries=0, timeout=0.3)
        with pytest.raises(ModelError, match=r"timed out.*0\.3 s") as caught:
            await model.request(REQUEST)
        await model.aclose()
    assert caught.value.retryable


def test_missing_key_is_reported_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(ConfigError) as caught:
        AnthropicModel("claude-sonnet-4-5")
    for hint in ("ANTHROPIC_API_KEY", "api_key=", "--model test"):
        assert hint in str(caught.value)


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ConfigError, match=r"pip install 'steadyloop\[anthropic\]'"):
        AnthropicModel("claude-sonnet-4-5", api_key="k")


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="anthropic:MODEL"):
        AnthropicModel(" ", api_key="k")
    with pytest.raises(ConfigError, match="max_tokens"):
        AnthropicModel("m", api_key="k", max_tokens=0)


def test_spec_strings_make_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    model = resolve_model("anthropic:claude-haiku-4-5")
    assert isinstance(model, AnthropicModel)
    assert model.name == "anthropic:claude-haiku-4-5"
    assert from_spec("claude-opus-4-1").model == "claude-opus-4-1"


async def test_a_given_client_is_used_and_left_open() -> None:
    with FakeAnthropic([message(text("via client"))]) as fake:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=fake.url)
        model = AnthropicModel("m", client=client)
        reply = await model.request(REQUEST)
        await model.aclose()
        assert not client.is_closed()
        await client.close()
    assert reply.text == "via client"


def test_settings_cannot_set_what_the_agent_sets() -> None:
    with pytest.raises(ConfigError, match="messages, system"):
        AnthropicModel("m", api_key="k", settings={"system": "x", "messages": []})


def test_client_and_connection_options_are_exclusive() -> None:
    client = anthropic.AsyncAnthropic(api_key="k")
    with pytest.raises(ConfigError, match="client="):
        AnthropicModel("m", client=client, base_url="http://127.0.0.1:1")
