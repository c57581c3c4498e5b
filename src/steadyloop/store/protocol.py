"""`RunLog`: what the agent, resume, replay, the CLI and the batch runner need from a run log.

Two stores implement it, SQLite (`SQLiteStore`, one file, zero set-up) and Postgres
(`PostgresStore`, many processes and hosts); `open_store(url)` picks one. Both keep the same
rules, checked by one conformance test suite:

- run ids may be given by the caller; `run(id)` looks them up exactly (a prefix look-up is the
  command line's convenience, `runs_with_prefix`);
- a duplicate id is a `ConfigError` for that run alone; a failed write fails only its own run;
- appends are deterministic and idempotent (see `steadyloop.store.recording`);
- a run's row and its prompt are committed together;
- a run is live while a process holds its claim (`claim`/`release`), whatever its status row says;
- a run may be linked to others (`RunLinks`): `session` lists a session's runs, `children` the
  sub-agent runs a run started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from steadyloop.events import Event
from steadyloop.messages import Message, Usage
from steadyloop.store.rows import LoggedEvent, RunInfo, RunLinks, ToolRecord

__all__ = ["RunLog"]


@runtime_checkable
class RunLog(Protocol):
    """A run log. Reads return what was recorded before them; writes are queued and committed
    in the background, `commit` being the point where a run waits for its rows."""

    location: str
    """Where the log is, for messages (a path, or a URL without its password)."""

    read_only: bool

    blocking_io: bool
    """True when a call may wait on the network: the agent makes such calls off the event loop
    (a local file's are quick enough to make in place)."""

    def start_run(
        self,
        *,
        model: str,
        prompt: str,
        history: Sequence[Message],
        config: Mapping[str, Any],
        run_id: str | None = None,
        links: RunLinks | None = None,
    ) -> str:
        """Adds a run (its history as its first events, `links` in its row), claims it and
        returns its id. A `run_id` already in the log is a `ConfigError`."""

    def recorder(
        self, run_id: str, next_seq: int | None = None, seen: Sequence[LoggedEvent] | None = None
    ) -> Callable[[Event], None]:
        """A callback that logs each event of the run; `next_seq` None reads where it stands
        (from `seen`, the run's events as the caller read them, when given)."""

    async def commit(self, run_id: str) -> None:
        """Returns once everything recorded so far is committed; `RunLogError` when a write of
        this run failed."""

    def flush(self) -> None:
        """Returns once everything recorded so far is committed (blocks)."""

    def mark(
        self, run_id: str, status: str, error: str | None = None, usage: Usage | None = None
    ) -> None:
        """Sets the run's status (running, paused, error, interrupted) and, when given, its
        usage."""

    def claim(self, run_id: str) -> None:
        """Marks the run live here; `ConfigError` when it is live elsewhere."""

    def release(self, run_id: str) -> None:
        """Ends this process's claim on the run."""

    def runs(self, limit: int = 20) -> list[RunInfo]:
        """The most recent runs, newest first."""

    def run(self, run_id: str) -> RunInfo:
        """The run with exactly this id; `ConfigError` when there is none."""

    def find(self, run_id: str) -> RunInfo | None:
        """The run with exactly this id, or None."""

    def session(self, name: str) -> list[RunInfo]:
        """The runs of session `name` in the order they started, oldest first ([] for a name
        with no runs)."""

    def latest(self, session: str) -> RunInfo | None:
        """The run of `session` that started last (None for a name with no runs)."""

    def children(self, run_id: str) -> list[RunInfo]:
        """The sub-agent runs run `run_id` started, in the order they started."""

    def runs_with_prefix(self, prefix: str, limit: int = 2) -> list[RunInfo]:
        """Runs whose id starts with `prefix` (at most `limit`)."""

    def events(self, run_id: str) -> list[LoggedEvent]:
        """Every logged event of the run, in order."""

    def messages(self, run_id: str) -> tuple[Message, ...]:
        """The run's transcript as logged."""

    def tool_records(self, run_id: str) -> dict[str, ToolRecord]:
        """The answered tool calls of the run, by call id."""

    def to_jsonl(self, run_id: str) -> Iterator[str]:
        """The run as JSON lines (see `steadyloop.store.export`)."""

    def from_jsonl(self, lines: Iterable[str]) -> str:
        """Adds an exported run; returns its id."""

    def close(self) -> None:
        """Commits what is queued and releases the connection and this process's claims."""
