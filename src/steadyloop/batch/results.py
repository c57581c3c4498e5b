"""A batch's results file: one JSON line per task, appended as each run ends.

Each row is `{"id", "run_id", "status", "output", "usage", "error"}`; `status` is "answered",
"limit" (`error` names the limit), "paused" (gated calls wait for a decision; `error` names them)
or "error" (`error` says what failed). The file is the batch's
memory of what is done: a task with a row is never run again, so a second run of a finished
batch appends nothing. Rows are written whole, one write each; a kill can still tear the last
one, and the next run cuts that torn tail off before appending (the task runs again, or reads
its logged result, and gets a whole row).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from pydantic_core import to_jsonable_python

from steadyloop.errors import ConfigError
from steadyloop.result import RunResult

__all__ = ["ResultsFile", "error_row", "result_row"]

Row = dict[str, Any]

_STATUSES = {"end_turn": "answered", "approval": "paused"}


def result_row(task_id: str, run_id: str, result: RunResult[Any]) -> Row:
    """The row of a run that answered, stopped at a limit, or paused for approval (`error`
    then names the waiting calls: `steadyloop resume RUN --approve CALL` goes on)."""
    status = _STATUSES.get(result.stop_reason, "limit")
    error = None if status == "answered" else result.stop_reason
    if status == "paused":
        error = f"approval: {', '.join(call.call_id for call in result.pending)}"
    return {
        "id": task_id,
        "run_id": run_id,
        "status": status,
        "output": to_jsonable_python(result.output),
        "usage": result.usage.to_dict(),
        "error": error,
    }


def error_row(task_id: str, run_id: str, exc: BaseException) -> Row:
    """The row of a run that failed."""
    return {
        "id": task_id,
        "run_id": run_id,
        "status": "error",
        "output": None,
        "usage": None,
        "error": f"{type(exc).__name__}: {exc}",
    }


class ResultsFile:
    """The results file at `path`, opened for appending; `done` holds the ids it has rows for."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.done: set[str] = set()
        self._file: IO[str] | None = None
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        """Reads the ids already done, cutting off a last line that a kill left torn."""
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read the results file {self.path}: {exc}") from exc
        whole = data[: data.rfind(b"\n") + 1]
        if len(whole) < len(data):
            os.truncate(self.path, len(whole))
        for number, line in enumerate(whole.splitlines(), 1):
            if not line.strip():
                continue
            try:
                self.done.add(str(json.loads(line)["id"]))
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"line {number} of the results file {self.path} is not a result row "
                    f"({exc}); remove that line, or write the results to another file"
                ) from exc

    def append(self, row: Row) -> None:
        """Writes `row` as one whole line (one write, flushed at once)."""
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._file.flush()
        self.done.add(row["id"])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
