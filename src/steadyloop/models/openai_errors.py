"""The one place where OpenAI-protocol failures become steadyloop errors.

Both OpenAI adapters (Chat Completions and Responses, and every OpenAI-compatible server behind
them) wrap their SDK calls in `openai_errors(...)`; errors that arrive inside a 200 response or
stream (an `error` object in a chunk, a `response.failed` event) go through `error_from_body`.
Per DESIGN.md §3:

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
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from steadyloop.errors import ConfigError, ContextWindowExceeded, ModelError, SteadyloopError
from steadyloop.retry import retry_after

__all__ = ["KeyHint", "error_from_body", "openai_errors"]

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
