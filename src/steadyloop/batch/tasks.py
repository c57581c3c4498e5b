"""A batch's tasks: read from a JSON-lines file or taken from an iterable of dicts.

Each task is an object `{"id": ..., "prompt": "...", "deps": ..., "output": "module:Type"}`;
other keys (an expected answer, say) are the caller's and are ignored. A line that is not a JSON
object, or lacks an id or a prompt, is reported with its line number and left out: one bad line
never stops a batch. Two tasks with one id would share a run and a result row, so duplicate ids
are refused before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steadyloop.errors import ConfigError
from steadyloop.messages import Prompt

__all__ = ["BadLine", "BadTask", "JsonLine", "Task", "jsonl_lines", "read_tasks"]

RUN_OPTIONS = ("deps", "output")
"""Task keys passed on to `Agent.run`: each task carries its own, so a worker on another host
needs nothing from the driver's environment."""


@dataclass(frozen=True, slots=True)
class Task:
    """One run to make: its prompt (text, or text, image and document parts: an eval's cases
    give those) and the options (`deps`, `output`) its task gave."""

    id: str
    prompt: Prompt
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BadLine:
    """An item left out of a JSON-lines file or a list: `line` is its line in the file (from
    1), or its place in the list; `reason` says why."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


class BadTask(BadLine):
    """A task left out: `line` is its line in the file (from 1), or its place in the iterable."""

    __slots__ = ()


def read_tasks(
    source: str | Path | Iterable[Mapping[str, Any]],
) -> tuple[list[Task], list[BadTask]]:
    """The tasks of `source` (a JSONL path, or an iterable of dicts) and the ones left out.

    Raises `ConfigError` when the file cannot be read or two tasks share an id.
    """
    tasks: list[Task] = []
    bad: list[BadTask] = []
    lines: dict[str, list[int]] = {}
    items: Iterable[tuple[int, Any]] = (
        jsonl_lines(Path(source), "the tasks file")
        if isinstance(source, str | Path)
        else enumerate(source, 1)
    )
    for line, item in items:
        try:
            task = _task(item)
        except ValueError as exc:
            bad.append(BadTask(line, str(exc)))
            continue
        tasks.append(task)
        lines.setdefault(task.id, []).append(line)
    _refuse_duplicates(lines, source)
    return tasks, bad


def jsonl_lines(path: Path, what: str) -> Iterator[tuple[int, JsonLine]]:
    """Each non-blank line of the JSON-lines file `path` with its number (from 1), not parsed
    yet (made as they are taken). The file is read at once: one that cannot be read is a
    `ConfigError` naming it as `what` ("the tasks file")."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    return ((n, JsonLine(raw)) for n, raw in enumerate(data.splitlines(), 1) if raw.strip())


class JsonLine:
    """A line not parsed yet: parsing it where its item is read lets its error (a `ValueError`)
    become that line's report."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def parse(self) -> Any:
        try:
            return json.loads(self.raw)
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8 text ({exc.reason})") from exc
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from exc


def _task(item: Any) -> Task:
    if isinstance(item, JsonLine):
        item = item.parse()
    if not isinstance(item, Mapping):
        raise ValueError(f"a task is a JSON object, got {type(item).__name__}")
    task_id = item.get("id")
    if task_id is None or task_id == "":
        raise ValueError('no "id"')
    if isinstance(task_id, bool) or not isinstance(task_id, str | int):
        raise ValueError(f'"id" must be a string or an integer, got {task_id!r}')
    prompt = item.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise ValueError(f'task {task_id}: "prompt" must be a non-empty string')
    options = {key: item[key] for key in RUN_OPTIONS if item.get(key) is not None}
    return Task(str(task_id), prompt, options)


def _refuse_duplicates(lines: Mapping[str, list[int]], source: object) -> None:
    duplicates = [(task_id, at) for task_id, at in lines.items() if len(at) > 1]
    if not duplicates:
        return
    place = "lines" if isinstance(source, str | Path) else "items"
    shown = "; ".join(
        f"{task_id!r} on {place} {', '.join(map(str, at))}" for task_id, at in duplicates[:5]
    )
    more = f" (and {len(duplicates) - 5} more)" if len(duplicates) > 5 else ""
    where = f" in {source}" if isinstance(source, str | Path) else ""
    raise ConfigError(
        f"duplicate task ids{where}: {shown}{more}; give each task its own id (nothing was run)"
    )
