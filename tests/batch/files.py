"""The batch tests' files: task lists in, result rows and the fake agents' journal out."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from steadyloop.store import LoggedEvent
from support import TESTS


def write_tasks(path: Path, count: int, *, prefix: str = "task") -> Path:
    """A JSONL file of `count` tasks `t0..`, prompts `"{prefix} N"`."""
    lines = (json.dumps({"id": f"t{i}", "prompt": f"{prefix} {i}"}) for i in range(count))
    path.write_text("".join(line + "\n" for line in lines))
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a results file (each line must be JSON)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def journal_lines(path: Path) -> Iterable[list[str]]:
    """The journal's lines split into words (see `batch.agents`)."""
    if path.exists():
        yield from (line.split(" ") for line in path.read_text().splitlines())


def comparable(events: list[LoggedEvent]) -> list[tuple[int, str, Any]]:
    """A run's events without what differs between two runs of it (times, durations)."""
    return [(e.seq, e.kind, {k: v for k, v in e.data.items() if k != "duration"}) for e in events]


HERE = Path(__file__).parent
RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    # Workers run this interpreter instead of rebuilding the environment under `uv run`.
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
}


def ray_worker_env(folder: Path) -> dict[str, str]:
    """What Ray workers of these tests see: the test folders on their path (they unpickle the
    fake agents of `batch.agents`), its settings, a journal and a step that kills its
    worker once (see `batch.agents`)."""
    return {
        "PYTHONPATH": str(TESTS),
        "BATCH_TEST_SLEEP": "0.002,0.01",
        "BATCH_TEST_JOURNAL": str(folder / "journal"),
        "BATCH_TEST_DIE_AT": "doomed 1 1",
        "BATCH_TEST_DIED": str(folder / "died"),
    }
