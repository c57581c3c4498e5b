"""Model adapters, and the spec strings that name them.

`openai:MODEL` (Chat Completions), `openai-responses:MODEL`, `anthropic:MODEL`,
`ollama:MODEL` (any OpenAI-compatible server), `google:MODEL` (the Gemini API),
`vertex:MODEL` (Gemini on Vertex AI), `bedrock:MODEL` (Claude on Amazon Bedrock),
`fallback:A,B` (a `Fallback` chain of those), `test` (the offline `TestModel`). Each provider
lives in its own module, imported only when its spec is used, so `import steadyloop` stays fast
and a missing SDK is reported only to those who need it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from steadyloop.errors import ConfigError
from steadyloop.models.base import Model, ModelRequest, StreamPart

__all__ = ["PROVIDERS", "Model", "ModelRequest", "StreamPart", "resolve_model"]

# provider prefix -> module with `from_spec(name: str) -> Model`
PROVIDERS: dict[str, str] = {
    "openai": "steadyloop.models.openai_chat",
    "openai-responses": "steadyloop.models.openai_responses",
    "anthropic": "steadyloop.models.anthropic",
    "ollama": "steadyloop.models.ollama",
    "google": "steadyloop.models.google",
    "vertex": "steadyloop.models.vertex",
    "bedrock": "steadyloop.models.bedrock",
    "fallback": "steadyloop.fallback",
}

NO_MODEL_HINT = (
    "no model given: pass a model spec (Agent('openai:gpt-4.1-mini'), or --model "
    "openai:gpt-4.1-mini on the command line) or set STEADYLOOP_MODEL; use the model 'test' "
    "(--model test) to run offline"
)


def resolve_model(spec: str | Model | None, *, settings: Mapping[str, Any] | None = None) -> Model:
    """A `Model` as is; a spec string (or `STEADYLOOP_MODEL` when None) made into one, with
    `settings` (extra request fields such as temperature or tool_choice) when given."""
    if isinstance(spec, Model):
        if settings:
            raise ConfigError("settings go with a model spec; pass them to the Model itself")
        return spec
    text = (spec if spec is not None else os.environ.get("STEADYLOOP_MODEL", "")).strip()
    if not text:
        raise ConfigError(NO_MODEL_HINT)
    if text == "test":
        from steadyloop.testing import TestModel

        return TestModel()  # it calls no server: settings have nothing to change
    provider, colon, name = text.partition(":")
    module_name = PROVIDERS.get(provider)
    if not colon or not name or module_name is None:
        known = ", ".join(f"{p}:MODEL" for p in PROVIDERS)
        raise ConfigError(f"unknown model spec {text!r}: use one of {known}, or 'test'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise ConfigError(f"the {provider!r} provider is not available in this build") from exc
        raise
    model: Model = module.from_spec(name, settings=settings) if settings else module.from_spec(name)
    return model
