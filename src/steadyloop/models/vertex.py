"""`vertex:MODEL`: Gemini on Vertex AI (project, location, Application Default Credentials),
the `GoogleModel` of `steadyloop.models.google` with `vertex=True`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from steadyloop.models.google import GoogleModel

__all__ = ["from_spec"]


def from_spec(name: str, *, settings: Mapping[str, Any] | None = None) -> GoogleModel:
    """The model for the spec `vertex:NAME`: `GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION`."""
    return GoogleModel(name, vertex=True, settings=settings)
