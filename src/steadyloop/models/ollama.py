"""`ollama:MODEL`: the Chat Completions adapter pointed at a local OpenAI-compatible server.

The server is `OLLAMA_HOST` (as Ollama itself reads it: `host`, `host:port` or a URL, with or
without `/v1`), else `http://localhost:11434/v1`. No key is needed. Any other OpenAI-compatible
server (vLLM, llama.cpp, LM Studio) works the same way through
`OpenAIChatModel(model, base_url=..., api_key=...)`. Ollama takes images only as data, not as
URLs, and no PDF files: a prompt with either is a `ConfigError` before anything is sent. A
thinking model's `reasoning` goes back with its reply to the same host and model, as the Chat
adapter does for every server.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from steadyloop.models.openai_chat import OpenAIChatModel

__all__ = ["DEFAULT_HOST", "from_spec", "ollama_base_url"]

DEFAULT_HOST = "http://localhost:11434/v1"
_DEFAULT_PORT = 11434


def ollama_base_url(host: str | None = None) -> str:
    """The `/v1` API root for an Ollama host setting (None: `OLLAMA_HOST`, else the default)."""
    text = (host if host is not None else os.environ.get("OLLAMA_HOST", "")).strip()
    if not text:
        return DEFAULT_HOST
    if "://" not in text:
        text = "http://" + text
        if urlsplit(text).port is None:
            text = text.rstrip("/") + f":{_DEFAULT_PORT}"
    text = text.rstrip("/")
    return text if text.endswith("/v1") else text + "/v1"


def from_spec(name: str, **options: Any) -> OpenAIChatModel:
    """`ollama:MODEL`: Chat Completions against `OLLAMA_HOST`, no key."""
    options.setdefault("base_url", ollama_base_url())
    options.setdefault("name", f"ollama:{name}")
    options.setdefault("key_env", None)
    options.setdefault("image_urls", False)
    options.setdefault("pdfs", False)
    return OpenAIChatModel(name, **options)
