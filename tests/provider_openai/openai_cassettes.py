"""Reads the recorded provider traffic in `tests/fixtures/provider-cassettes/` into one shape,
whatever the recorder: vcrpy YAML (plain, gzip'd or with pydantic-ai's `parsed_body`), opencode
JSON recordings and the llama-cpp-python captures.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CASSETTES = Path(__file__).resolve().parents[1] / "fixtures" / "provider-cassettes"


@dataclass(frozen=True)
class Interaction:
    """One recorded request and its response (body as text)."""

    url: str
    request: Mapping[str, Any]
    status: int
    headers: Mapping[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)

    def sse_data(self) -> list[dict[str, Any]]:
        """The JSON `data:` payloads of an SSE body, in order (comments and [DONE] skipped)."""
        events: list[dict[str, Any]] = []
        for line in self.body.splitlines():
            line = line.strip()
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                events.append(json.loads(line[5:]))
        return events

    @property
    def is_stream(self) -> bool:
        return "text/event-stream" in self.headers.get("content-type", "")


def load(relative: str) -> list[Interaction]:
    """Every interaction of one recording, by its path under the cassettes folder."""
    return list(_load(relative))


@functools.cache
def _load(relative: str) -> tuple[Interaction, ...]:
    path = CASSETTES / relative
    if path.suffix == ".json":
        return tuple(_from_json(json.loads(path.read_text())))
    return tuple(_from_vcr(yaml.load(path.read_text(), Loader=_LOADER)))


def _from_vcr(data: Mapping[str, Any]) -> Iterator[Interaction]:
    for item in data["interactions"]:
        request, response = item["request"], item["response"]
        body = request.get("parsed_body")
        if body is None:
            raw = request.get("body") or "{}"
            body = json.loads(raw if isinstance(raw, str) else _text(raw))
        headers = {k.lower(): _first(v) for k, v in (response.get("headers") or {}).items()}
        if "parsed_body" in response:
            text = json.dumps(response["parsed_body"])
            headers.setdefault("content-type", "application/json")
        else:
            text = _text(response["body"]["string"])
        status = response["status"]["code"]
        yield Interaction(request.get("uri", ""), body, status, headers, text)


def _from_json(data: Mapping[str, Any]) -> Iterator[Interaction]:
    items = data.get("interactions") or [data]
    for item in items:
        request, response = item["request"], item["response"]
        body = request.get("body") or {}
        if isinstance(body, str):
            body = json.loads(body)
        text = response["body"]
        if not isinstance(text, str):
            text = json.dumps(text)
        headers = {k.lower(): _first(v) for k, v in (response.get("headers") or {}).items()}
        if text.startswith("data:") or "\ndata:" in text:
            headers["content-type"] = "text/event-stream"
        url = request.get("url") or request.get("path", "")
        yield Interaction(url, body, int(response["status"]), headers, text)


def _text(raw: object) -> str:
    if isinstance(raw, bytes):
        try:
            return gzip.decompress(raw).decode()
        except OSError:
            return raw.decode()
    return str(raw)


def _first(value: object) -> str:
    if isinstance(value, list):
        return str(value[0])
    return str(value)
