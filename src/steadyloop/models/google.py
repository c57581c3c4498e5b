"""`google:MODEL` (the Gemini API) and `vertex:MODEL` (Vertex AI) through the official
`google-genai` SDK.

The SDK is imported when a model is made, so `import steadyloop` stays fast and a missing SDK
is reported only to those who use this provider. The SDK's client does the HTTP, the
credentials (an API key, or Application Default Credentials on Vertex), the base URL and its
own retries; the request body is built here as Gemini's JSON (`google_wire`) and sent through
the client's request method, the one `models.generate_content` ends in. Going through
`generate_content` itself would validate and convert the whole history through pydantic on
every call (18 ms for 40 contents), and would hand back thought signatures re-encoded.

Settings are `GenerateContentConfig` fields, checked by the SDK's own model when the model is
made and converted to the wire once by the SDK's converter. Errors are mapped here:

- 429 `RESOURCE_EXHAUSTED`: retryable, `retry_after` from `RetryInfo.retryDelay`, else the
  `Retry-After` header; 408, 5xx, connection errors, timeouts, a cut stream: retryable;
- 400 "The input token count (N) exceeds the maximum number of tokens allowed (M).":
  `ContextWindowExceeded(limit=M)`;
- a rejected key (`API_KEY_INVALID`, 401, 403) or credentials that cannot be found or
  refreshed: `ConfigError`, never retried; 404: `ConfigError` naming the model;
- any other 4xx: `ModelError(retryable=False)` with Google's message.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from steadyloop.errors import ConfigError, ContextWindowExceeded, ModelError, SteadyloopError
from steadyloop.messages import AssistantMessage
from steadyloop.models.base import Model, ModelRequest, StreamPart
from steadyloop.models.google_wire import (
    Origin,
    StreamAssembler,
    build_body,
    parse_reply,
    parsed_json,
)
from steadyloop.models.timeout import Deadline
from steadyloop.models.wire import ToolNames, own_settings
from steadyloop.retry import retry_after
from steadyloop.secrets import Redactor, clean_key, secrets_kept, shown_location

if TYPE_CHECKING:
    from google.genai import Client
    from google.genai.types import GenerateContentConfig, HttpOptions

__all__ = ["GoogleModel", "error_from_api", "from_spec"]

MISSING_SDK_TEXT = (
    "the google and vertex providers need the google-genai SDK: pip install 'steadyloop[google]'"
)
MISSING_KEY_TEXT = (
    "GEMINI_API_KEY is not set (nor GOOGLE_API_KEY): export it, or pass api_key=... to "
    "GoogleModel, or use --model test to run offline"
)
MISSING_PROJECT_TEXT = (
    "GOOGLE_CLOUD_PROJECT is not set: export it (and GOOGLE_CLOUD_LOCATION, default global), "
    "or pass project=... to GoogleModel(..., vertex=True)"
)
CREDENTIALS_ADVICE = (
    "set GOOGLE_APPLICATION_CREDENTIALS to a credentials file, or run "
    "`gcloud auth application-default login`"
)
# GenerateContentConfig fields the agent and the adapter own.
OWNED_SETTINGS = frozenset(
    {"system_instruction", "tools", "http_options", "automatic_function_calling"}
)
OWNED_ADVICE = "give the Agent instructions=... and tools=...; http_options to GoogleModel"
_CONTEXT_LIMIT = re.compile(r"exceeds the maximum number of tokens allowed \((\d+)\)")
_SECONDS = re.compile(r"^(\d+(?:\.\d+)?)s$")


def from_spec(name: str, *, settings: Mapping[str, Any] | None = None) -> GoogleModel:
    """The model for the spec `google:NAME` (the Gemini API)."""
    return GoogleModel(name, settings=settings)


class GoogleModel(Model):
    """A Gemini model over the Gemini API or Vertex AI, plain or streamed.

    Args:
        model: the model id, e.g. "gemini-3-flash-preview".
        api_key: the Gemini API key (default: `GOOGLE_API_KEY`, else `GEMINI_API_KEY`, the
            SDK's order); with `vertex=True`, a Vertex express-mode key (no project needed).
        vertex: Vertex AI instead of the Gemini API: project, location and Application Default
            Credentials.
        project: the Google Cloud project (default: `GOOGLE_CLOUD_PROJECT`; Vertex only).
        location: the region (default: `GOOGLE_CLOUD_LOCATION`, else "global"; Vertex only).
        base_url: the API root (default: the `base_url` of `http_options`, else
            `GOOGLE_GEMINI_BASE_URL`, or `GOOGLE_VERTEX_BASE_URL` for Vertex, else Google's).
        http_options: a dict or `google.genai.types.HttpOptions`: extra headers for a gateway,
            the API version, ...
        client: a ready `google.genai.Client` instead of one made from the above (then none of
            api_key, base_url, http_options, project, location); left open by `aclose`.
        max_retries: the SDK's own retries of 429/5xx/connection errors. 0 by default: the
            agent's loop retries the model call (`Agent(model_retries=...)`).
        timeout: seconds one model call may take in all, streamed or not; running out is a
            retryable `ModelError`.
        settings: `GenerateContentConfig` fields, snake_case or camelCase: `temperature`,
            `max_output_tokens`, `thinking_config`, `safety_settings`, `tool_config` (left out
            of requests without tools), ... A name that is not a field, or one the agent sets
            (`system_instruction`, `tools`, `http_options`, `automatic_function_calling`), is a
            `ConfigError`.
        name: the spec shown in logs (default "google:MODEL", or "vertex:MODEL").
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        vertex: bool = False,
        project: str | None = None,
        location: str | None = None,
        base_url: str | None = None,
        http_options: Mapping[str, Any] | HttpOptions | None = None,
        client: Client | None = None,
        max_retries: int = 0,
        timeout: float = 600.0,
        settings: Mapping[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        provider = "vertex" if vertex or (client is not None and client.vertexai) else "google"
        if not model.strip():
            raise ConfigError(
                f"no Gemini model named: use {provider}:MODEL, "
                f"e.g. {provider}:gemini-3-flash-preview"
            )
        try:
            genai = importlib.import_module("google.genai")
        except ImportError as exc:
            raise ConfigError(MISSING_SDK_TEXT) from exc
        config = _config(settings)
        given = (api_key, base_url, http_options, project, location)
        if client is not None and any(value is not None for value in given):
            raise ConfigError(
                "pass either client=... or api_key/base_url/http_options/project/location, not both"
            )
        self.model = model
        self.spec = f"{provider}:{model}"
        self.name = name or self.spec
        self.timeout = timeout
        self._vertex = provider == "vertex"
        self._owns_client = client is None
        key: str | None = None
        if client is None:
            options = _http_options(http_options, base_url, self._vertex, max_retries)
            if self._vertex:
                client, key = _vertex_client(genai, api_key, project, location, options)
            else:
                key = _gemini_key(api_key)
                client = genai.Client(api_key=key, http_options=options)
        self._client = client
        self._api = client._api_client
        self._settings = _wire_settings(client, model, config)
        self._path = self._settings.pop("_url")["model"]
        self._redact = Redactor([key or self._api.api_key])
        self._shown_url = shown_location(str(self._api._http_options.base_url or ""))
        self._origin = Origin(self._shown_url.rstrip("/"), self.spec)

    async def request(self, request: ModelRequest) -> AssistantMessage:
        names = ToolNames(spec.name for spec in request.tools)
        body = self._body(request, names)
        with self._mapped_errors():
            async with Deadline(self.timeout, self.name):
                response = await self._api.async_request(
                    "post", f"{self._path}:generateContent", body
                )
        data = parsed_json(response.body or "", self.name)
        return parse_reply(data, names, self._origin)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamPart]:
        """Yields text and tool-call deltas as the chunks arrive, then the whole reply. A
        stream that breaks or ends without a finish reason raises a retryable `ModelError`."""
        names = ToolNames(spec.name for spec in request.tools)
        body = self._body(request, names)
        assembler = StreamAssembler(names, self._origin)
        deadline = Deadline(self.timeout, self.name)
        with self._mapped_errors():
            async with deadline:
                chunks = await self._api.async_request_streamed(
                    "post", f"{self._path}:streamGenerateContent?alt=sse", body
                )
            try:
                async for chunk in deadline.bound(chunks):
                    for part in assembler.feed(parsed_json(chunk.body or "", self.name)):
                        yield part
            finally:
                await chunks.aclose()
        yield assembler.result()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aio.aclose()

    def _body(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        body = build_body(
            request.instructions, request.messages, request.tools, names, self._origin
        )
        for key, value in self._settings.items():
            if key != "toolConfig" or request.tools:
                body[key] = value
        return body

    @contextmanager
    def _mapped_errors(self) -> Iterator[None]:
        """The SDK's and the transport's exceptions as steadyloop's, with no key in them."""
        from google.auth import exceptions as auth
        from google.genai import errors

        with secrets_kept(self._redact):
            try:
                yield
            except errors.APIError as exc:
                headers = getattr(exc.response, "headers", None)
                raise error_from_api(
                    exc.code, exc.details, headers, model=self.name, vertex=self._vertex
                ) from exc
            except (auth.DefaultCredentialsError, auth.RefreshError) as exc:
                raise ConfigError(
                    f"{self.name}: no usable Google Cloud credentials ({exc}); {CREDENTIALS_ADVICE}"
                ) from exc
            except errors.UnknownApiResponseError as exc:
                raise ModelError(
                    f"{self.name}: the reply is not Gemini's: {exc}; check the base URL",
                    provider=self.name,
                ) from exc
            except _transport_errors(auth.TransportError) as exc:
                raise ModelError(
                    f"{self.name}: Connection error: {self._shown_url} did not answer, or the "
                    f"connection broke during the reply ({type(exc).__name__}: {exc})",
                    retryable=True,
                    provider=self.name,
                ) from exc


def _gemini_key(api_key: str | None) -> str:
    """The key: `api_key`, else `GOOGLE_API_KEY`, else `GEMINI_API_KEY` (the SDK's order)."""
    for value, source in (
        (api_key, "api_key"),
        (os.environ.get("GOOGLE_API_KEY"), "GOOGLE_API_KEY"),
        (os.environ.get("GEMINI_API_KEY"), "GEMINI_API_KEY"),
    ):
        if value and value.strip():
            return clean_key(value, source)
    raise ConfigError(MISSING_KEY_TEXT)


def _http_options(
    given: Mapping[str, Any] | HttpOptions | None,
    base_url: str | None,
    vertex: bool,
    max_retries: int,
) -> HttpOptions:
    """The client's HTTP options: the base URL always explicit (the SDK would take a Vertex
    URL from the environment for a gateway's and drop the project from the path), and the
    SDK's retries as asked (none by default, also none of its hidden connection retry)."""
    from google.genai import types

    if isinstance(given, types.HttpOptions):
        options = given.model_copy()
    else:
        try:
            options = types.HttpOptions.model_validate(dict(given or {}))
        except ValueError as exc:
            raise ConfigError(f"http_options: {_first_problem(exc)}") from exc
    variable = "GOOGLE_VERTEX_BASE_URL" if vertex else "GOOGLE_GEMINI_BASE_URL"
    url = base_url or options.base_url or os.environ.get(variable) or None
    if url:
        options.base_url = url
    if options.retry_options is None:
        options.retry_options = types.HttpRetryOptions(attempts=max_retries + 1)
    return options


def _vertex_client(
    genai: Any,
    api_key: str | None,
    project: str | None,
    location: str | None,
    options: HttpOptions,
) -> tuple[Client, str | None]:
    """A Vertex AI client: express mode with a key, else project, location and ADC (looked
    up at the first call, never guessed from a metadata server here)."""
    if api_key:
        key = clean_key(api_key, "api_key")
        return genai.Client(vertexai=True, api_key=key, http_options=options), key
    project = project or os.environ.get("GOOGLE_CLOUD_PROJECT") or None
    if not project:
        raise ConfigError(MISSING_PROJECT_TEXT)
    location = location or os.environ.get("GOOGLE_CLOUD_LOCATION") or "global"
    client = genai.Client(vertexai=True, project=project, location=location, http_options=options)
    return client, None


def _config(settings: Mapping[str, Any] | None) -> GenerateContentConfig:
    """`settings` as the SDK's `GenerateContentConfig`: a name that is not one of its fields,
    a value of the wrong kind, or a field the agent sets is a `ConfigError` naming it."""
    from google.genai import types

    given = dict(settings or {})
    own_settings({_snake(key): value for key, value in given.items()}, OWNED_SETTINGS, OWNED_ADVICE)
    try:
        return types.GenerateContentConfig(**given)
    except ValueError as exc:  # pydantic's ValidationError is one
        raise ConfigError(f"settings: {_first_problem(exc)}") from exc


def _wire_settings(client: Client, model: str, config: GenerateContentConfig) -> dict[str, Any]:
    """The request fields `config` stands for, and `_url.model` (the model's path), by the
    SDK's own converter (once, when the model is made)."""
    from google.genai import _common, types
    from google.genai import models as sdk

    try:
        params = types._GenerateContentParameters(model=model, contents=None, config=config)
        convert = (
            sdk._GenerateContentParameters_to_vertex
            if client.vertexai
            else sdk._GenerateContentParameters_to_mldev
        )
        wire = convert(client._api_client, params, None, params)
    except ValueError as exc:  # pydantic's ValidationError is one
        raise ConfigError(f"settings: {_first_problem(exc)}") from exc
    out: dict[str, Any] = json.loads(json.dumps(_common.convert_to_dict(wire)))
    if not out.get("generationConfig"):
        out.pop("generationConfig", None)
    return out


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _first_problem(exc: Exception) -> str:
    """What is wrong, in one line: a pydantic error names the field."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        if first.get("type") == "extra_forbidden":
            return f"{where!r} is not a GenerateContentConfig field (see google.genai.types)"
        return f"{where}: {first.get('msg')}"
    return str(exc)


def error_from_api(
    code: int,
    body: object,
    headers: Mapping[str, str] | None = None,
    *,
    model: str = "google",
    vertex: bool = False,
) -> SteadyloopError:
    """The error for a Google API error response (`{"error": {code, message, status, ...}}`)."""
    error = body.get("error", body) if isinstance(body, Mapping) else {}
    if not isinstance(error, Mapping):
        error = {"message": str(error)}
    message = str(error.get("message") or body or "no error message")
    status = str(error.get("status") or "")
    listed = error.get("details")
    details: list[Any] = listed if isinstance(listed, list) else []
    reasons = {str(d.get("reason")) for d in details if isinstance(d, Mapping)}
    detail = f"HTTP {code} {status or 'error'}: {message}"
    limit = _CONTEXT_LIMIT.search(message)
    if limit is not None or "exceeds the maximum number of tokens" in message:
        return ContextWindowExceeded(
            f"{model}: the request is too long for the model's context window ({detail})",
            status=code,
            provider=model,
            limit=int(limit.group(1)) if limit else None,
        )
    if code in (401, 403) or "API_KEY_INVALID" in reasons or "API key not valid" in message:
        advice = CREDENTIALS_ADVICE if vertex else "check GEMINI_API_KEY (or GOOGLE_API_KEY)"
        return ConfigError(f"{model}: Google rejected the credentials ({detail}); {advice}")
    if code == 404:
        return ConfigError(f"{model}: not found ({detail}); check the model name and base URL")
    retryable = code in (408, 429) or code >= 500
    wait = None
    if retryable:
        wait = _retry_delay(details) if code == 429 else None
        wait = wait if wait is not None else retry_after(headers)
    return ModelError(
        f"{model}: the Gemini API failed ({detail})",
        retryable=retryable,
        status=code,
        provider=model,
        retry_after=wait,
    )


def _retry_delay(details: list[Any]) -> float | None:
    """`retryDelay` of a `google.rpc.RetryInfo` detail ("26s"), in seconds."""
    for detail in details:
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith("RetryInfo"):
            match = _SECONDS.match(str(detail.get("retryDelay") or ""))
            if match:
                return float(match.group(1))
    return None


def _transport_errors(*more: type[BaseException]) -> tuple[type[BaseException], ...]:
    """The HTTP libraries' transport errors the SDK lets through (httpx, httpx2, aiohttp), and
    `more`."""
    found: list[type[BaseException]] = list(more)
    for module_name, error_name in (
        ("httpx", "TransportError"),
        ("httpx2", "TransportError"),
        ("aiohttp", "ClientError"),
    ):
        error = getattr(sys.modules.get(module_name), error_name, None)
        if isinstance(error, type) and issubclass(error, BaseException):
            found.append(error)
    return tuple(found)
