"""`bedrock:MODEL`: Claude on Amazon Bedrock, through the `anthropic` SDK's Bedrock client.

Bedrock's InvokeModel endpoint takes Anthropic's Messages body, so `BedrockModel` is an
`AnthropicModel` with an `AsyncAnthropicBedrock` client: the same wire rules, thinking replay,
prompt caching and streaming (AWS event-stream frames, decoded by the SDK). What differs is
where it connects, how it signs, and Bedrock's error bodies (`{"message": ...}` with the
`x-amzn-ErrorType` header, and `exception` frames inside a stream):

- a region from `region=`, `AWS_REGION` or `AWS_DEFAULT_REGION` (or the AWS profile's);
- a Bedrock API key (`api_key=`, else `AWS_BEARER_TOKEN_BEDROCK`) sent as a bearer token, else
  SigV4 signatures with the AWS credential chain (boto3: `AWS_ACCESS_KEY_ID`..., a profile, an
  instance role); credentials that cannot be found are a `ConfigError` at the first call;
- `ThrottlingException`, `ServiceUnavailableException`, `InternalServerException`,
  `ModelStreamErrorException`, `ModelTimeoutException`, 429 and 5xx: retryable `ModelError`;
- a prompt too long (`Input is too long for requested model.`, Anthropic's own `prompt is too
  long: N tokens > M maximum`): `ContextWindowExceeded`;
- `AccessDeniedException`, `UnrecognizedClientException`, 401/403: `ConfigError` naming the
  credentials; `ResourceNotFoundException`, 404, an invalid model identifier: `ConfigError`
  naming the model.

Other Bedrock models (gpt-oss, Qwen, Mistral...) are reached through Bedrock's OpenAI-compatible
endpoint with `OpenAIChatModel` (see docs/providers.md); `bedrock:` takes Claude models only.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from steadyloop.errors import ConfigError, ContextWindowExceeded, ModelError, SteadyloopError
from steadyloop.models.anthropic import MISSING_SDK_TEXT, AnthropicModel, error_from_response
from steadyloop.models.anthropic_wire import Origin
from steadyloop.models.base import ModelRequest
from steadyloop.models.wire import ToolNames
from steadyloop.retry import retry_after
from steadyloop.secrets import clean_key

if TYPE_CHECKING:
    from anthropic import AsyncAnthropicBedrock

__all__ = ["OPENAI_RECIPE", "BedrockModel", "bedrock_error", "from_spec"]

PREFIX = "bedrock"
BEDROCK_VERSION = "bedrock-2023-05-31"  # the `anthropic_version` InvokeModel requires
OPENAI_RECIPE = (
    'OpenAIChatModel(MODEL, base_url="https://bedrock-runtime.REGION.amazonaws.com/openai/v1", '
    'key_env="AWS_BEARER_TOKEN_BEDROCK")'
)
NO_REGION_TEXT = (
    "no AWS region for Bedrock: export AWS_REGION (e.g. us-east-1), or pass region=... to "
    "BedrockModel"
)
NO_CREDENTIALS_TEXT = (
    "no AWS credentials for Bedrock: export AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), or "
    "set up the AWS credential chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
    "an instance role)"
)
NO_BOTO3_TEXT = (
    "Bedrock without AWS_BEARER_TOKEN_BEDROCK signs its requests with boto3: pip install "
    "'steadyloop[bedrock]', or export AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)"
)
_RETRYABLE_KINDS = frozenset(
    {
        "throttlingexception",
        "serviceunavailableexception",
        "internalserverexception",
        "modelstreamerrorexception",
        "modeltimeoutexception",
        "modelnotreadyexception",
    }
)
_CREDENTIAL_KINDS = frozenset(
    {
        "accessdeniedexception",
        "unrecognizedclientexception",
        "expiredtokenexception",
        "invalidsignatureexception",
        "missingauthenticationtokenexception",
    }
)
_TOO_LONG = "input is too long"


def from_spec(name: str, *, settings: Mapping[str, Any] | None = None) -> BedrockModel:
    """The model for the spec `bedrock:NAME`."""
    return BedrockModel(name, settings=settings)


class BedrockModel(AnthropicModel):
    """A Claude model on Amazon Bedrock (InvokeModel), plain or streamed.

    Args:
        model: a Bedrock model id or inference profile of a Claude model, e.g.
            "anthropic.claude-sonnet-4-5-20250929-v1:0", "us.anthropic.claude-sonnet-4-5-...",
            or an inference profile ARN. Other models: see `OPENAI_RECIPE`.
        region: the AWS region (default: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the
            AWS profile's); none is a `ConfigError`.
        api_key: a Bedrock API key, sent as a bearer token (default:
            `AWS_BEARER_TOKEN_BEDROCK`). Without one, requests are signed (SigV4) with the AWS
            credential chain, which needs boto3 (`steadyloop[bedrock]`).
        aws_profile: the AWS profile whose credentials sign the requests.
        base_url: the endpoint (default: `ANTHROPIC_BEDROCK_BASE_URL`, else
            `https://bedrock-runtime.REGION.amazonaws.com`).
        client: an `anthropic.AsyncAnthropicBedrock` to use instead; `aclose` leaves it open.

    `max_tokens`, `max_retries`, `timeout` and `settings` are `AnthropicModel`'s. The name is
    `bedrock:MODEL`, priced from the price tables' Bedrock entries.
    """

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        api_key: str | None = None,
        aws_profile: str | None = None,
        base_url: str | None = None,
        client: AsyncAnthropicBedrock | None = None,
        max_tokens: int = 4096,
        max_retries: int = 0,
        timeout: float = 600.0,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigError(
                "no Bedrock model named: use bedrock:MODEL, e.g. "
                "bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0"
            )
        if not _is_claude(model):
            raise ConfigError(
                f"bedrock:{model} is not a Claude model: bedrock: takes Anthropic models "
                f"(anthropic.claude-..., us.anthropic.claude-...); reach other Bedrock models "
                f"through Bedrock's OpenAI-compatible endpoint: {OPENAI_RECIPE}"
            )
        given = (region, api_key, aws_profile, base_url)
        if client is not None and given != (None, None, None, None):
            raise ConfigError(
                "pass either client=... or region/api_key/aws_profile/base_url, not both"
            )
        owns = client is None
        if client is None:
            client = _client(region, api_key, aws_profile, base_url, max_retries)
        super().__init__(
            model, client=client, max_tokens=max_tokens, timeout=timeout, settings=settings
        )
        self.name = f"{PREFIX}:{model}"
        self._owns_client = owns

    def _params(self, request: ModelRequest, names: ToolNames) -> tuple[dict[str, Any], Origin]:
        """Anthropic's fields, with the API version Bedrock documents (the SDK would send its
        own first-party version instead)."""
        params, origin = super()._params(request, names)
        params["extra_body"] = {
            "anthropic_version": BEDROCK_VERSION,
            **params.get("extra_body", {}),
        }
        return params, origin

    def _error(self, status: int, body: object, headers: Mapping[str, str]) -> SteadyloopError:
        return bedrock_error(status, body, headers, model=self.name)

    @contextmanager
    def _mapped_errors(self) -> Iterator[None]:
        """The Anthropic mapping, and the SDK's signing failure when the AWS credential chain
        finds nothing: a `ConfigError`, never retried."""
        with super()._mapped_errors():
            try:
                yield
            except RuntimeError as exc:
                if "AWS credentials" not in str(exc):
                    raise
                raise ConfigError(f"{self.name}: {NO_CREDENTIALS_TEXT}") from exc


def _is_claude(model: str) -> bool:
    """Whether a model id names a Claude model (an ARN cannot be told: it is taken)."""
    lowered = model.lower()
    return "anthropic" in lowered or "claude" in lowered or lowered.startswith("arn:")


def _client(
    region: str | None,
    api_key: str | None,
    aws_profile: str | None,
    base_url: str | None,
    max_retries: int,
) -> AsyncAnthropicBedrock:
    """The SDK's Bedrock client: a bearer token when there is one, else SigV4 with boto3."""
    try:
        import anthropic
    except ImportError as exc:
        raise ConfigError(MISSING_SDK_TEXT.replace("[anthropic]", "[bedrock]")) from exc
    token = api_key if api_key is not None else os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
    token = clean_key(token, "AWS_BEARER_TOKEN_BEDROCK") if token and token.strip() else None
    if token is None and importlib.util.find_spec("boto3") is None:
        raise ConfigError(NO_BOTO3_TEXT)
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    try:
        return anthropic.AsyncAnthropicBedrock(
            aws_region=region,
            aws_profile=None if token is not None else aws_profile,
            api_key=token,
            base_url=base_url,
            max_retries=max_retries,
        )
    except ValueError as exc:  # no region anywhere, or a key and a profile both
        text = NO_REGION_TEXT if "region" in str(exc) else f"Bedrock: {exc}"
        raise ConfigError(text) from exc


def bedrock_error(
    status: int,
    body: object,
    headers: Mapping[str, str] | None = None,
    *,
    model: str = PREFIX,
) -> SteadyloopError:
    """The error for a Bedrock error response (`status` 200: an exception frame in a stream)."""
    kind, message = _fields(body, headers)
    detail = f"HTTP {status} {kind or 'error'}: {message}"
    lowered = kind.lower()
    anthropic_view = error_from_response(status, {"error": {"type": kind, "message": message}})
    if isinstance(anthropic_view, ContextWindowExceeded) or _TOO_LONG in message.lower():
        limit = anthropic_view.limit if isinstance(anthropic_view, ContextWindowExceeded) else None
        return ContextWindowExceeded(
            f"{model}: the request is too long for the model's context window ({detail})",
            status=status,
            provider=PREFIX,
            limit=limit,
        )
    if status in (401, 403) or lowered in _CREDENTIAL_KINDS:
        return ConfigError(
            f"{model}: Bedrock rejected the credentials or the model access ({detail}); check "
            "AWS_BEARER_TOKEN_BEDROCK or the AWS credentials, and that the account has access "
            "to the model in this region"
        )
    if (
        status == 404
        or lowered == "resourcenotfoundexception"
        or "model identifier is invalid" in message.lower()
    ):
        return ConfigError(
            f"{model}: Bedrock has no such model here ({detail}); check the model id or "
            "inference profile in bedrock:MODEL and AWS_REGION"
        )
    retryable = status in (408, 429) or status >= 500 or lowered in _RETRYABLE_KINDS
    return ModelError(
        f"{model}: Bedrock failed ({detail})",
        retryable=retryable,
        status=status,
        provider=PREFIX,
        retry_after=retry_after(headers) if retryable else None,
    )


def _fields(body: object, headers: Mapping[str, str] | None) -> tuple[str, str]:
    """The error's kind and message: from a stream's error event (`error.type`), else from the
    `x-amzn-ErrorType` header ("ThrottlingException:http://...") and the body's `message`."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            return str(error.get("type") or ""), str(error.get("message") or "")
        message = str(body.get("message") or body.get("Message") or "")
    else:
        message = "" if body is None else str(body)
    values = {name.lower(): value for name, value in (headers or {}).items()}
    kind = values.get("x-amzn-errortype", "").partition(":")[0]
    return kind, message
