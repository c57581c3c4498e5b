"""`anthropic:MODEL`: Claude through the official `anthropic` SDK (Messages API).

The SDK is imported when a model is made, so `import steadyloop` stays fast and a missing SDK
is reported only to those who use this provider. Message mapping lives in `anthropic_wire`;
this module holds the client, streaming, and the one place vendor errors become ours:

- 429, 5xx, 529 overloaded, connection errors, timeouts, an `error` event inside a 200 stream
  (F36) and a stream that ends without `message_stop` (F37): `ModelError(retryable=True)`
  with `retry_after` from the response headers (`steadyloop.retry.retry_after`);
- 401/403: `ConfigError` naming the key; 404: `ConfigError` naming the model;
- "prompt is too long", "input length and `max_tokens` exceed context limit", 413
  `request_too_large` and `stop_reason: model_context_window_exceeded`:
  `ContextWindowExceeded`, with `.limit` when the message states it (F34);
- any other 4xx: `ModelError(retryable=False)`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from steadyloop.errors import ConfigError, ContextWindowExceeded, ModelError, SteadyloopError
from steadyloop.messages import AssistantMessage
from steadyloop.models.anthropic_wire import (
    DISABLED_THINKING,
    PROVIDER,
    Origin,
    StreamAssembler,
    Target,
    build_request,
    parse_message,
)
from steadyloop.models.base import Model, ModelRequest, StreamPart
from steadyloop.models.timeout import Deadline
from steadyloop.models.wire import ToolNames, own_settings, request_settings
from steadyloop.retry import retry_after
from steadyloop.secrets import Redactor, clean_key, secrets_kept, shown_location

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic, AsyncAnthropicBedrock

__all__ = ["AnthropicModel", "error_from_response", "from_spec"]

MISSING_SDK_TEXT = (
    "the anthropic provider needs the anthropic SDK: pip install 'steadyloop[anthropic]'"
)
MISSING_KEY_TEXT = (
    "ANTHROPIC_API_KEY is not set: export it, or pass api_key=... to AnthropicModel, "
    "or use --model test to run offline"
)
_RETRYABLE_KINDS = {"overloaded_error", "rate_limit_error", "api_error", "timeout_error"}
_CONTEXT_LIMITS = (
    re.compile(r"prompt is too long: \d+ tokens > (\d+) maximum"),
    re.compile(r"input length and `max_tokens` exceed context limit: \d+ \+ \d+ > (\d+)"),
)
# Request fields the adapter and the agent fill in, which settings may not replace.
OWNED_SETTINGS = frozenset({"model", "max_tokens", "messages", "system", "tools", "stream"})
OWNED_ADVICE = "use max_tokens=..., Agent(instructions=..., tools=...)"
# The SDK refuses a plain (not streamed) request whose max_tokens could take over 10 minutes:
# above 21,333 tokens, or 8,192 for some models. Larger replies are streamed.
NONSTREAMING_MAX_TOKENS = 8_192
_CONTEXT_WORDS = re.compile(r"prompt is too long|exceed context limit|context window", re.I)


def from_spec(name: str, *, settings: Mapping[str, Any] | None = None) -> AnthropicModel:
    """The model for the spec `anthropic:NAME`."""
    return AnthropicModel(name, settings=settings)


class AnthropicModel(Model):
    """A Claude model over the Messages API, plain or streamed.

    Args:
        model: the model id, e.g. "claude-sonnet-4-6".
        base_url: the API root (default: `ANTHROPIC_BASE_URL`, else Anthropic's). Errors show
            it without its password.
        api_key: the key (default: `ANTHROPIC_API_KEY`, else the bearer token
            `ANTHROPIC_AUTH_TOKEN`), less surrounding whitespace and line endings; checked
            here, not at the first call. No error text ever quotes it.
        client: an `anthropic.AsyncAnthropic` to use instead of one made from base_url,
            api_key and max_retries; `aclose` leaves it open.
        max_tokens: the output limit of each reply. Above what the SDK allows without
            streaming, `request` streams and returns the whole reply.
        max_retries: the SDK's own retries of 429/5xx/connection errors. 0 by default: the
            agent's loop retries the model call (`Agent(model_retries=...)`), and a second
            layer would multiply the requests (3 x 3 for one persistent 503).
        timeout: seconds one model call may take in all, streamed or not, so a stream kept
            open with pings is cut off too; running out is a retryable `ModelError`. Raise it
            for replies that take longer. The SDK keeps its own limits on connecting and on
            silence.
        settings: extra request fields sent as they are, e.g. `{"temperature": 0}`,
            `{"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}` (left out of
            requests without tools) or `{"thinking": {"type": "enabled", "budget_tokens": 2048}}`.
            Each reply of this model at this endpoint goes back exactly as received, its
            thinking included (left out with thinking off); a tool loop whose latest reply
            cannot begin with its own thinking (another model's, or one made before a
            compaction) goes on with thinking disabled, the only form the API accepts. A field
            the adapter fills in itself (`OWNED_SETTINGS`: model, max_tokens, messages...) is
            a `ConfigError`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncAnthropic | AsyncAnthropicBedrock | None = None,
        max_tokens: int = 4096,
        max_retries: int = 0,
        timeout: float = 600.0,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigError(
                "no Anthropic model named: use anthropic:MODEL, e.g. anthropic:claude-sonnet-4-6"
            )
        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {max_tokens}")
        self.settings = own_settings(settings, OWNED_SETTINGS, OWNED_ADVICE)
        if client is not None and (base_url, api_key) != (None, None):
            raise ConfigError("pass either client=... or base_url/api_key, not both")
        try:
            import anthropic
        except ImportError as exc:
            raise ConfigError(MISSING_SDK_TEXT) from exc
        self.model = model
        self.name = f"{PROVIDER}:{model}"
        self.max_tokens = max_tokens
        self._sdk = anthropic
        self._owns_client = client is None
        if client is None:
            key, token = _credentials(api_key)
            client = anthropic.AsyncAnthropic(
                api_key=key, auth_token=token, base_url=base_url, max_retries=max_retries
            )
        self._client = client
        self._redact = Redactor([client.api_key, getattr(client, "auth_token", None)])
        self._shown_url = shown_location(str(client.base_url))
        self.timeout = timeout
        thinking = self.settings.get("thinking")
        self._target = Target(
            endpoint=str(client.base_url).rstrip("/"),
            model=model,
            thinking=isinstance(thinking, Mapping) and thinking.get("type") != "disabled",
        )

    async def request(self, request: ModelRequest) -> AssistantMessage:
        if self.max_tokens > NONSTREAMING_MAX_TOKENS:
            parts = [part async for part in self.stream(request)]
            assert isinstance(parts[-1], AssistantMessage), "a stream ends with the reply"
            return parts[-1]
        names = ToolNames(spec.name for spec in request.tools)
        params, origin = self._params(request, names)
        with self._mapped_errors():
            async with Deadline(self.timeout, self.name):
                reply = await self._client.messages.create(**params)
        # The SDK hands back the text of a reply that is not JSON (an HTML page from a proxy)
        # and builds a message from any JSON. Warnings off: an SDK older than a block type
        # (thinking) keeps it loosely, but whole.
        data: object = reply
        if isinstance(reply, self._sdk.BaseModel):
            data = reply.model_dump(mode="json", warnings=False, exclude_none=True)
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise ModelError(
                f"{self.name}: the reply is not a Messages API reply: {data!r:.200}; check "
                "base_url (a proxy or another server may have answered)",
                provider=PROVIDER,
            )
        return parse_message(data, names, origin)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        """Yields text and tool-call deltas as the SSE events arrive, then the whole reply.

        An error event or a broken stream raises a retryable `ModelError`; the text streamed
        so far is never returned as a reply (F36, F37).
        """
        names = ToolNames(spec.name for spec in request.tools)
        params, origin = self._params(request, names)
        assembler = StreamAssembler(names, origin)
        deadline = Deadline(self.timeout, self.name)
        with self._mapped_errors():
            async with deadline:
                events = await self._client.messages.create(**params, stream=True)
            try:
                async for event in deadline.bound(events):
                    for part in assembler.feed(event.model_dump(mode="json", warnings=False)):
                        yield part
            finally:
                await events.close()
        if not assembler.finished:
            raise ModelError(
                f"{self.name}: the stream ended before message_stop; the reply is incomplete",
                retryable=True,
                provider=PROVIDER,
            )
        yield assembler.result()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()

    def _params(self, request: ModelRequest, names: ToolNames) -> tuple[dict[str, Any], Origin]:
        """The call's fields, and where its reply comes from (for the reply's `native`)."""
        wire = build_request(request, names, self._target)
        params = {"model": self.model, "max_tokens": self.max_tokens, **wire.body}
        # Sent as raw JSON, so fields newer than the installed SDK work too.
        extra = request_settings(self.settings, has_tools="tools" in params)
        if wire.thinking_off:
            extra["thinking"] = DISABLED_THINKING
        if extra:
            params["extra_body"] = extra
        return params, Origin(self._target.endpoint, self.model, wire.prefix)

    @contextmanager
    def _mapped_errors(self) -> Iterator[None]:
        """Turns the SDK's exceptions (and the transport's, mid-stream) into steadyloop's, with
        no key or URL password in their text."""
        sdk = self._sdk
        with secrets_kept(self._redact):
            try:
                yield
            except sdk.APIStatusError as exc:
                raise self._error(exc.status_code, exc.body, exc.response.headers) from exc
            except sdk.APIConnectionError as exc:
                raise ModelError(
                    f"{self.name}: could not reach {self._shown_url}: {exc}",
                    retryable=True,
                    provider=PROVIDER,
                ) from exc
            except _transport_errors() as exc:
                raise ModelError(
                    f"{self.name}: the connection broke during the reply: {exc}",
                    retryable=True,
                    provider=PROVIDER,
                ) from exc

    def _error(self, status: int, body: object, headers: Mapping[str, str]) -> SteadyloopError:
        """The error for an error response of this model's endpoint (`status` 200: an error
        event in a stream)."""
        return error_from_response(status, body, headers, model=self.name)


def _credentials(api_key: str | None) -> tuple[str | None, str | None]:
    """The key, or else the bearer token, to send: `api_key`, `ANTHROPIC_API_KEY` or
    `ANTHROPIC_AUTH_TOKEN`, less surrounding whitespace; neither is a `ConfigError`."""
    for value, source in (
        (api_key, "api_key"),
        (os.environ.get("ANTHROPIC_API_KEY"), "ANTHROPIC_API_KEY"),
    ):
        if value and value.strip():
            return clean_key(value, source), None
    token = os.environ.get("ANTHROPIC_AUTH_TOKEN")
    if token and token.strip():
        return None, clean_key(token, "ANTHROPIC_AUTH_TOKEN")
    raise ConfigError(MISSING_KEY_TEXT)


def error_from_response(
    status: int,
    body: object,
    headers: Mapping[str, str] | None = None,
    *,
    model: str = PROVIDER,
) -> SteadyloopError:
    """The error for an Anthropic error response (`status` 200: an error event in a stream)."""
    kind, message = _error_fields(body)
    detail = f"HTTP {status} {kind or 'error'}: {message}"
    limit = _context_limit(message)
    if status == 413 or kind == "request_too_large" or _CONTEXT_WORDS.search(message):
        return ContextWindowExceeded(
            f"{model}: the request is too long for the model's context window ({detail})",
            status=status,
            provider=PROVIDER,
            limit=limit,
        )
    if status in (401, 403) or kind in ("authentication_error", "permission_error"):
        return ConfigError(
            f"{model}: Anthropic rejected the credentials ({detail}); check ANTHROPIC_API_KEY "
            "or api_key=..., or use --model test to run offline"
        )
    if status == 404 or kind == "not_found_error":
        return ConfigError(
            f"{model}: not found ({detail}); check the model name in anthropic:MODEL "
            "and ANTHROPIC_BASE_URL"
        )
    retryable = status in (408, 409, 429) or status >= 500 or kind in _RETRYABLE_KINDS
    return ModelError(
        f"{model}: the Anthropic API failed ({detail})",
        retryable=retryable,
        status=status,
        provider=PROVIDER,
        retry_after=retry_after(headers) if retryable else None,
    )


def _error_fields(body: object) -> tuple[str | None, str]:
    """`error.type` and `error.message` of an error body (a dict, or text that is not JSON)."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            kind = error.get("type")
            return (kind if isinstance(kind, str) else None), str(error.get("message") or "")
    return None, "" if body is None else str(body)


def _context_limit(message: str) -> int | None:
    for pattern in _CONTEXT_LIMITS:
        match = pattern.search(message)
        if match:
            return int(match.group(1))
    return None


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's transport errors (a dropped stream raises these unwrapped)."""
    found: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        module = sys.modules.get(name)
        error = getattr(module, "TransportError", None)
        if isinstance(error, type) and issubclass(error, BaseException):
            found.append(error)
    return tuple(found)
