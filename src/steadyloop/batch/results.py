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

import fcntl
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from pydantic_core import to_jsonable_python

from steadyloop.approvals import PendingCall
from steadyloop.errors import ConfigError
from steadyloop.result import RunResult
from steadyloop.store import RunInfo

__all__ = ["STATUSES", "ResultsFile", "error_row", "paused_row", "result_row"]

Row = dict[str, Any]

_STATUSES = {"end_turn": "answered", "approval": "paused"}
STATUSES = ("answered", "limit", "paused", "error")


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
        "usage": result.usage.as_json(),
        "error": error,
    }


def paused_row(task_id: str, info: RunInfo, waiting: Sequence[PendingCall]) -> Row:
    """The row of a run that the log holds paused, waiting on `waiting`."""
    return {
        "id": task_id,
        "run_id": info.id,
        "status": "paused",
        "output": None,
        "usage": info.usage.as_json(),
        "error": f"approval: {', '.join(call.call_id for call in waiting)}",
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
    """The results file at `path`, opened for appending; `done` holds the ids it has rows for.

    One batch at a time writes it: from opening to `close()` it holds a lock on `PATH.lock`
    beside it (which names its process), and a second opening is a `ConfigError` before it reads
    anything. The operating system drops the lock when the process dies, however it dies, so a
    killed batch never leaves the file locked. `batch` names the batch in that error.
    """

    def __init__(self, path: str | Path, batch: str | None = None) -> None:
        self.path = Path(path)
        self.done: set[str] = set()
        self._file: IO[str] | None = None
        self._lock = _lock(self.path, batch)
        try:
            if self.path.exists():
                self._read()
        except BaseException:
            os.close(self._lock)
            raise

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
                row = json.loads(line)
                if row["status"] not in STATUSES:
                    raise ValueError(f"unknown status {row['status']!r}")
                self.done.add(str(row["id"]))
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"line {number} of the results file {self.path} is not a result row "
                    f"({type(exc).__name__}: {exc}); remove that line, or write the results "
                    "to another file"
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
        """Closes the file and lets another batch write it."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


def _lock(path: Path, batch: str | None) -> int:
    """Takes the lock of results file `path` (without waiting) and writes this process's id in
    it; `ConfigError` naming the process that holds it."""
    name = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise ConfigError(f"cannot lock the results file {path} ({name}): {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise ConfigError(
            f"batch {batch or path.stem} is already running in process {holder} (it is writing "
            f"{path}): let it finish, or stop it and run the batch again to resume it; nothing "
            "was run"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd
