"""An evaluation's cases: read from a JSON-lines file, or given as a Python list.

Each case is `{"id", "input", "expected"?, "metadata"?}`. `input` is text, or a list of parts:
strings, or objects as the run log writes them (`{"type": "text", "text"}`, `{"type": "image",
"media_type", "data"}` or `"url"`, `{"type": "document", ...}`), where an image or a document may
give `"path"` instead, read relative to the dataset file's folder. Any other key makes the case
bad (a typo such as `"expcted"` must not silently drop an expected answer). A bad case is
reported with its line and left out; two cases with one id are a `ConfigError` before anything
runs (their runs and rows would be one).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steadyloop.batch.tasks import BadLine, JsonLine, jsonl_lines
from steadyloop.errors import ConfigError
from steadyloop.media import Document, Image, Part, part_from_dict

__all__ = ["BadCase", "Case", "Dataset"]

KEYS = ("id", "input", "expected", "metadata")


@dataclass(frozen=True)
class Case:
    """One case: what the agent is asked (`input`: text, or text, `Image` and `Document` parts),
    the answer `expected` (any JSON; None: none) and `metadata` of yours (given to scorers)."""

    id: str
    input: str | tuple[Part, ...]
    expected: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.id, bool) or not isinstance(self.id, str | int) or self.id == "":
            raise ValueError(f'"id" must be a non-empty string or an integer, got {self.id!r}')
        object.__setattr__(self, "id", str(self.id))
        if not isinstance(self.input, str):
            if isinstance(self.input, bytes | Mapping) or not isinstance(self.input, Sequence):
                raise ValueError(f'"input" must be text or a list of parts, got {self.input!r}')
            object.__setattr__(self, "input", tuple(self.input))
        if not self.input:
            raise ValueError('"input" is empty')
        for part in self.input if isinstance(self.input, tuple) else ():
            if not isinstance(part, str | Image | Document):
                raise ValueError(f"an input part must be a str, an Image or a Document: {part!r}")
        if not isinstance(self.metadata, Mapping):
            raise ValueError(f'"metadata" must be an object, got {self.metadata!r}')

    @property
    def text(self) -> str:
        """The input's text: its text parts joined with a newline (as the run log's prompt)."""
        if isinstance(self.input, str):
            return self.input
        return "\n".join(part for part in self.input if isinstance(part, str))

    def input_json(self) -> str | list[Any]:
        """The input for a report: the text, or its parts (an image or document by its type and
        name, not its bytes)."""
        if isinstance(self.input, str):
            return self.input
        return [_part_json(part) for part in self.input]


class BadCase(BadLine):
    """A case left out: `line` is its line in the file (from 1), or its place in the list."""

    __slots__ = ()


class Dataset:
    """Cases in order (`cases`) and the ones left out (`bad`); `path` is the file read, if any.

    `Dataset(items)` takes a list of `Case` and/or dicts (numbered from 1 by place);
    `Dataset.from_jsonl(path)` reads a file. Two cases with one id are a `ConfigError`.
    """

    def __init__(
        self, cases: Iterable[Case | Mapping[str, Any]], *, base: str | os.PathLike[str] = "."
    ) -> None:
        self.path: Path | None = None
        self.cases, self.bad = _read(enumerate(cases, 1), Path(base), "items")

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike[str]) -> Dataset:
        """The cases of a JSON-lines file; a path in a case is read relative to its folder."""
        file = Path(path)
        lines = jsonl_lines(file, "the dataset")
        dataset = cls.__new__(cls)
        dataset.path = file
        dataset.cases, dataset.bad = _read(lines, file.parent, "lines", file)
        return dataset

    def __len__(self) -> int:
        return len(self.cases)

    def __repr__(self) -> str:
        return f"Dataset({len(self.cases)} cases, {len(self.bad)} bad)"


def _read(
    items: Iterable[tuple[int, Any]], base: Path, place: str, source: Path | None = None
) -> tuple[list[Case], list[BadCase]]:
    cases: list[Case] = []
    bad: list[BadCase] = []
    lines: dict[str, list[int]] = {}
    for line, item in items:
        try:
            case = item if isinstance(item, Case) else _case(item, base)
        except (ValueError, ConfigError) as exc:
            bad.append(BadCase(line, str(exc)))
            continue
        cases.append(case)
        lines.setdefault(case.id, []).append(line)
    duplicates = [(case_id, at) for case_id, at in lines.items() if len(at) > 1]
    if duplicates:
        shown = "; ".join(f"{i!r} on {place} {', '.join(map(str, at))}" for i, at in duplicates)
        where = f" in {source}" if source is not None else ""
        raise ConfigError(
            f"duplicate case ids{where}: {shown}; give each case its own id (nothing was run)"
        )
    return cases, bad


def _case(item: Any, base: Path) -> Case:
    if isinstance(item, JsonLine):
        item = item.parse()
    if not isinstance(item, Mapping):
        raise ValueError(f"a case is a JSON object, got {type(item).__name__}")
    unknown = sorted(set(item) - set(KEYS))
    if unknown:
        raise ValueError(
            f"unknown key {', '.join(map(repr, unknown))} (a case has {', '.join(KEYS)})"
        )
    if item.get("id") is None:
        raise ValueError('no "id"')
    if "input" not in item:
        raise ValueError(f'case {item["id"]}: no "input"')
    raw = item["input"]
    parts: Any = raw if isinstance(raw, str) else [_part(p, base) for p in _listed(raw)]
    return Case(item["id"], parts, item.get("expected"), item.get("metadata") or {})


def _listed(raw: Any) -> list[Any]:
    if not isinstance(raw, list):
        raise ValueError(f'"input" must be text or a list of parts, got {type(raw).__name__}')
    return raw


def _part(raw: Any, base: Path) -> Part:
    """A part as the log writes it, or an image or document given by `"path"`."""
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, Mapping):
        raise ValueError(f"an input part is text or an object, got {raw!r}")
    kind = raw.get("type")
    if "path" in raw and kind in ("image", "document"):
        path = base / str(raw["path"])
        return Image.from_path(path) if kind == "image" else Document.from_path(path)
    try:
        return part_from_dict(raw)
    except KeyError as exc:
        raise ValueError(f"a {kind} part needs {exc}") from None


def _part_json(part: Part) -> Any:
    if isinstance(part, str):
        return part
    if isinstance(part, Image):
        where = {"url": part.url} if part.url else {}
        return {"type": "image", "media_type": part.media_type, **where}
    return {"type": "document", "media_type": part.media_type, "name": part.name}
