"""What a batch did: rows counted as they arrive (`Tally`), then a `BatchReport`."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from steadyloop.batch.results import Row
from steadyloop.batch.tasks import BadTask

__all__ = ["BatchReport", "Tally", "per_second"]


@dataclass(frozen=True, slots=True)
class BatchReport:
    """How a batch went: `tasks` read from the input (bad lines aside), `skipped` because the
    results file already had them, and this time's rows by status (`paused`: runs waiting for
    an approval). `unfinished` tasks have no
    row yet (their worker was lost, or the batch was stopped): running the batch again
    resumes them."""

    batch: str
    out: Path
    tasks: int
    skipped: int
    answered: int
    limit: int
    failed: int
    bad: tuple[BadTask, ...]
    seconds: float
    paused: int = 0

    @property
    def ran(self) -> int:
        """Rows written this time."""
        return self.answered + self.limit + self.failed + self.paused

    @property
    def unfinished(self) -> int:
        """Tasks without a row yet."""
        return self.tasks - self.skipped - self.ran

    def summary(self) -> str:
        """One paragraph for people."""
        rate = (
            f", {per_second(self.ran / self.seconds)} runs/s" if self.ran and self.seconds else ""
        )
        text = (
            f"batch {self.batch}: {_count(self.tasks, 'task')}; {self.answered} answered, "
            f"{self.limit} stopped at a limit, {self.failed} failed, {self.skipped} done before; "
            f"{self.seconds:.1f} s{rate}; results in {self.out}"
        )
        if self.paused:
            text += (
                f"\n{_count(self.paused, 'run')} paused for approval: decide each with "
                "`steadyloop resume RUN --approve CALL` (or --deny CALL=REASON); the rows name "
                "RUN and CALL"
            )
        if self.bad:
            text += f"\n{_count(len(self.bad), 'bad task line')} skipped"
        if self.unfinished:
            text += (
                f"\n{_count(self.unfinished, 'task')} did not finish: run the batch again to "
                "resume them"
            )
        return text


def per_second(rate: float) -> str:
    """A rate for people: whole numbers from 10 up, two significant digits below (0.23, not 0)."""
    if rate >= 10:
        return f"{rate:,.0f}"
    return f"{rate:.{max(1, 1 - math.floor(math.log10(rate)))}f}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


@dataclass
class Tally:
    """Rows counted by status as they arrive; `on_row` (a progress bar) is told of each."""

    batch: str
    started: float = field(default_factory=time.monotonic)
    statuses: Counter[str] = field(default_factory=Counter)
    on_row: Callable[[Counter[str]], None] | None = None

    def add(self, row: Row) -> None:
        self.statuses[row["status"]] += 1
        if self.on_row is not None:
            self.on_row(self.statuses)

    def report(self, out: Path, tasks: int, skipped: int, bad: tuple[BadTask, ...]) -> BatchReport:
        count = self.statuses
        return BatchReport(
            self.batch, out, tasks, skipped, count["answered"], count["limit"], count["error"],
            bad, time.monotonic() - self.started, count["paused"],
        )  # fmt: skip
