"""What both OpenAI adapters share: the SDK client, the one map of OpenAI-protocol failures to
steadyloop errors, and where a reply comes from.

`OpenAIModel` holds the SDK client, the key check and the request settings; Chat Completions
(`openai_chat`) and Responses (`openai_responses`) build on it. `Origin` is the API, endpoint
and model a reply's native content is bound to: only a reply of the same origin is sent back
verbatim (`Native.is_own`), everything else goes as canonical parts.

Every SDK call is wrapped in `openai_errors(...)`; errors that arrive inside a 200 response or
stream (an `error` object in a chunk, a `response.failed` event) go through `error_from_body`.
Per the error contract (`docs/errors.md`):

- 429 (but not `insufficient_quota` or "Request too large", which never succeed on retry), 408,
  409, 5xx, connection errors and timeouts: `ModelError(retryable=True)`, with `retry_after`
  from the `retry-after-ms` / `Retry-After` headers when present (`steadyloop.retry.retry_after`);
- 401/403: `ConfigError` saying which key to check; 404: `ConfigError` (unknown model or URL);
- the context is too long (`context_length_exceeded`, llama.cpp `exceed_context_size_error`,
  "maximum context length"): `ContextWindowExceeded`, with `.limit` when the text states it;
- a 500 whose body is a request validation error (llama.cpp rejecting a shape): not retryable;
- Groq's `tool_use_failed` (the model's call failed the server's schema check): retryable;
- any other 4xx: `ModelError(retryable=False)`.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from steadyloop.errors import ConfigError, ContextWindowExceeded, ModelError, SteadyloopError
from steadyloop.messages import ArgumentsError, AssistantMessage, Native, ToolCall
from steadyloop.models.base import Model
from steadyloop.models.timeout import Deadline
from steadyloop.models.wire import MediaRules, own_settings
from steadyloop.retry import retry_after
from steadyloop.secrets import Redactor, clean_key, secrets_kept, shown_location

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "OPENAI_MEDIA",
    "KeyHint",
    "OpenAIModel",
    "Origin",
    "drop_nulls",
    "error_from_body",
    "openai_errors",
    "wire_arguments",
]

OPENAI_MEDIA = MediaRules("openai")  # images (also by URL) and PDFs
INSTALL_HINT = "the OpenAI SDK is not installed: pip install 'steadyloop[openai]'"
NO_KEY_HINT = (
    "{env} is not set: export it, pass api_key=..., or use --model test "
    "(Agent('test')) to run offline"
)
OWNED_ADVICE = "name the model in the model spec; give the Agent instructions=... and tools=..."


@dataclass(frozen=True, slots=True)
class Origin:
    """The API ("openai-chat" or "openai-responses"), endpoint (the base URL without its
    password or trailing slash) and model name a reply came from."""

    api: str
    endpoint: str
    model: str

    def native(self, content: Any) -> Native:
        """The reply's own JSON, keys with null values dropped, bound to this origin."""
        return Native(self.api, self.endpoint, self.model, drop_nulls(content))

    def owns(self, message: AssistantMessage) -> bool:
        """Whether `message` is a reply of this very API, endpoint and model."""
        native = message.native
        return native is not None and native.is_own(self.api, self.endpoint, self.model)


def drop_nulls(value: Any) -> Any:
    """`value` with every key whose value is null dropped, at any depth."""
    if isinstance(value, Mapping):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [drop_nulls(v) for v in value]
    return value


class OpenAIModel(Model):
    """What both OpenAI adapters share: the SDK client, the key check, the request settings.

    Args:
        model: the provider's model name, e.g. "gpt-4.1-mini".
        base_url: the API root (default: `OPENAI_BASE_URL`, else api.openai.com). Errors show
            it without its password.
        api_key: the key (default: `OPENAI_API_KEY`), less surrounding whitespace and line
            endings; missing, or with a character a header cannot carry, is a `ConfigError`
            right away. No error text ever quotes it.
        client: a ready `openai.AsyncOpenAI` to use instead of building one.
        max_retries: the SDK's own retries of 429/5xx/connection errors. 0 by default: the
            agent's loop retries the model call (`Agent(model_retries=...)`), and a second
            layer would multiply the requests (3 x 3 for one persistent 503).
        timeout: seconds one model call may take in all, streamed or not, so a server that
            keeps the connection busy with keep-alive comments is cut off too; running out is a
            retryable `ModelError`. The SDK keeps its own limits on connecting and on silence.
        parallel_tool_calls: sent only when set and the request has tools.
        settings: extra request fields (temperature, max_tokens, ...), sent as given; one
            the adapter fills in itself (`owned_settings`: model, messages, stream...) is a
            `ConfigError`.
        image_urls, pdfs: whether the server fetches image URLs and reads PDF files in a
            prompt (OpenAI's does; many compatible servers do not): a prompt with one it
            cannot take is a `ConfigError` before anything is sent.
        name: the spec string shown in logs (default "<provider>:<model>").
        key_env: the variable a rejected-key error tells the user to check (None: no key).
    """

    provider = "openai"
    api = "openai-chat"
    owned_settings: frozenset[str] = frozenset()

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        max_retries: int = 0,
        timeout: float = 600.0,
        parallel_tool_calls: bool | None = None,
        settings: Mapping[str, Any] | None = None,
        name: str | None = None,
        key_env: str | None = "OPENAI_API_KEY",
        image_urls: bool = True,
        pdfs: bool = True,
    ) -> None:
        if not model:
            raise ConfigError(f"{self.provider}: a model name is required, e.g. gpt-4.1-mini")
        self.model = model
        self.name = name or f"{self.provider}:{model}"
        self.timeout = timeout
        self.parallel_tool_calls = parallel_tool_calls
        self.settings = own_settings(settings, self.owned_settings, OWNED_ADVICE)
        self.hint = KeyHint(key_env)
        self.media = MediaRules(self.name, image_urls=image_urls, pdfs=pdfs)
        self._owns_client = client is None
        self.client = (
            client
            if client is not None
            else self._make_client(base_url, api_key, max_retries, key_env)
        )
        self._redact = Redactor([self.client.api_key])
        self._shown_url = shown_location(str(self.client.base_url))
        self.origin = Origin(self.api, self._shown_url.rstrip("/"), model)

    @staticmethod
    def _make_client(
        base_url: str | None,
        api_key: str | None,
        max_retries: int,
        key_env: str | None,
    ) -> AsyncOpenAI:
        try:
            import openai
        except ModuleNotFoundError as exc:
            raise ConfigError(INSTALL_HINT) from exc
        key = _key(api_key, key_env)
        if not key:
            if key_env is not None:
                raise ConfigError(NO_KEY_HINT.format(env=key_env))
            key = "no-key"  # local servers ignore it, the SDK insists on one
        return openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=max_retries)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SDK exceptions mapped to steadyloop's, with no key or URL password in their text."""
        with secrets_kept(self._redact), openai_errors(self.name, self.hint, self._shown_url):
            yield

    async def _post(self, path: str, body: dict[str, Any]) -> Mapping[str, Any]:
        with self._errors():
            async with Deadline(self.timeout, self.name):
                data = await self.client.post(path, body=body, cast_to=object)
        if not isinstance(data, Mapping):
            raise ModelError(
                f"{self.name}: the reply is not a JSON object: {data!r:.200}; check base_url "
                "(a proxy or another server may have answered)",
                provider=self.name,
            )
        return data

    async def _events(self, path: str, body: dict[str, Any]) -> AsyncIterator[Mapping[str, Any]]:
        """The SSE data objects of a streamed request, with SDK errors mapped."""
        from openai import AsyncStream

        deadline = Deadline(self.timeout, self.name)
        with self._errors():
            async with deadline:
                stream = await self.client.post(
                    path, body=body, cast_to=object, stream=True, stream_cls=AsyncStream[object]
                )
            try:
                async for event in deadline.bound(stream):
                    if isinstance(event, Mapping):
                        yield event
            finally:
                await stream.close()

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.close()


def _key(api_key: str | None, key_env: str | None) -> str:
    """`api_key`, else the value of `key_env`, less surrounding whitespace ("" for none)."""
    if api_key:
        return clean_key(api_key, "api_key")
    value = os.environ.get(key_env) if key_env else None
    return clean_key(value, key_env) if value and key_env else ""


def wire_arguments(call: ToolCall) -> str:
    """A call's arguments as the JSON object text providers accept when it is replayed.

    A mapping is serialised (F15); text that is not a JSON object (cut off, `""`, `null`) is
    sent as `{}`, since some servers reject the whole history over one bad call (F18); the
    error result the model got for that call already quotes what it sent. The call remembers
    that its text was checked, so a history sent again each turn is not parsed again.
    """
    try:
        return call.arguments_json()
    except ArgumentsError:
        return "{}"


# -- errors --------------------------------------------------------------------------------------

_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_CONTEXT_TEXTS = ("maximum context length", "exceeds the context window")
_LIMIT_PATTERNS = (
    re.compile(r"maximum context length is (\d[\d,]*)"),
    re.compile(r"context window of (\d[\d,]*)"),
    re.compile(r"> (\d[\d,]*) maximum"),
)
_NEVER_RETRY_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
_RETRY_WORDS = frozenset(
    {"server_error", "internal_error", "overloaded_error", "rate_limit_exceeded", "timeout"}
)
_VALIDATION_TEXTS = ("validation error", "has no attribute")


@dataclass(frozen=True, slots=True)
class KeyHint:
    """How to tell the user to fix a rejected key: the variable and the argument to set."""

    env: str | None = "OPENAI_API_KEY"

    def advice(self) -> str:
        if self.env is None:
            return "check the server's API key (pass api_key=...) and base_url"
        return f"check {self.env} (or pass api_key=...)"


@contextmanager
def openai_errors(provider: str, hint: KeyHint, base_url: str | None = None) -> Iterator[None]:
    """Maps every `openai` SDK exception raised inside the block to a steadyloop error; a
    connection error names `base_url` (given without its password), so the server that is
    down is plain to see."""
    import openai

    try:
        yield
    except openai.APIStatusError as exc:
        raise _from_status(exc, provider, hint) from exc
    except openai.APIConnectionError as exc:  # also APITimeoutError, and streams cut mid-way
        where = f" at {base_url}" if base_url is not None else ""
        raise ModelError(
            f"{provider}: {exc.message}{where} ({_cause(exc)})",
            retryable=True,
            provider=provider,
        ) from exc
    except openai.APIError as exc:  # an error object inside a 200 stream
        raise error_from_body(exc.body, status=None, provider=provider, hint=hint) from exc


def error_from_body(
    body: object,
    *,
    status: int | None,
    provider: str,
    hint: KeyHint,
    headers: Mapping[str, str] | None = None,
) -> SteadyloopError:
    """The steadyloop error for a provider error body (HTTP error, or error inside a stream)."""
    error = _error_object(body)
    message = str(error.get("message") or error.get("raw") or body or "no error message")
    code = error.get("code")
    kind = str(error.get("type") or "")
    if status is None and isinstance(code, int):
        status = code  # OpenRouter and llama.cpp put the HTTP status in `code`
    code_text = code if isinstance(code, str) else ""
    words = {code_text, kind}
    where = f"{provider}: {message}" + (f" (HTTP {status})" if status else "")
    lowered = message.lower()
    if words & _CONTEXT_CODES or any(t in lowered for t in _CONTEXT_TEXTS):
        return ContextWindowExceeded(
            where, status=status, provider=provider, limit=_context_limit(message, error)
        )
    if status in (401, 403):
        return ConfigError(f"{where}: the key was rejected; {hint.advice()}")
    if status == 404:
        return ConfigError(f"{where}: check the model name and base_url")
    if status == 429:
        never = code_text in _NEVER_RETRY_CODES or "request too large" in lowered
        return ModelError(
            where,
            retryable=not never,
            status=status,
            provider=provider,
            retry_after=None if never else retry_after(headers),
        )
    if status is not None and status >= 500:
        validation = any(t in lowered for t in _VALIDATION_TEXTS)
        return ModelError(
            where + ("; the server rejected the request's shape" if validation else ""),
            retryable=not validation,
            status=status,
            provider=provider,
            retry_after=retry_after(headers),
        )
    # Groq's server-side check of a generated call (F17): a new sample can get it right
    resample = code_text == "tool_use_failed"
    retryable = resample or status in (408, 409) or (status is None and bool(words & _RETRY_WORDS))
    return ModelError(where, retryable=retryable, status=status, provider=provider)


def _from_status(exc: Any, provider: str, hint: KeyHint) -> SteadyloopError:
    body = exc.body if exc.body is not None else exc.response.text
    return error_from_body(
        body,
        status=exc.status_code,
        provider=provider,
        hint=hint,
        headers=exc.response.headers,
    )


def _error_object(body: object) -> Mapping[str, Any]:
    """The `{"message", "type", "code"}` object inside whatever shape the body has."""
    if isinstance(body, str):
        body = _parse(body)
    if not isinstance(body, Mapping):
        return {"message": str(body)} if body else {}
    inner = body.get("error")
    if isinstance(inner, Mapping):
        return inner
    if isinstance(inner, str):
        return {**body, "message": inner}
    return body


def _parse(text: str) -> object:
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed: object = parse(text)
        except (ValueError, SyntaxError):
            continue
        return parsed
    return {"message": text}


def _context_limit(message: str, error: Mapping[str, Any]) -> int | None:
    n_ctx = error.get("n_ctx")
    if isinstance(n_ctx, int):
        return n_ctx
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(message)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__
    return f"{type(cause).__name__}: {cause}" if cause is not None else type(exc).__name__
