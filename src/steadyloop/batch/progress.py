"""The progress bar of a batch on a terminal: done of total, failed, runs a second, time left."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.progress import Task as BarTask
from rich.text import Text

from steadyloop.batch.report import per_second

__all__ = ["progress_bar"]


class _Rate(ProgressColumn):
    def render(self, task: BarTask) -> Text:
        speed = task.finished_speed or task.speed
        shown = f"{per_second(speed)} runs/s" if speed else "… runs/s"
        return Text(shown, style="progress.data.speed")


@contextmanager
def progress_bar(batch: str, total: int) -> Iterator[Callable[[Counter[str]], None] | None]:
    """Draws a bar while in the block when stderr is a terminal; yields what to call with the
    counts by status after each row (None when nothing is drawn)."""
    console = Console(stderr=True)
    if not console.is_terminal or not total:
        yield None
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        _Rate(),
        TimeRemainingColumn(),
        console=console,
    )
    bar = progress.add_task(batch, total=total, failed=0)

    def update(counts: Counter[str]) -> None:
        progress.update(bar, completed=counts.total(), failed=counts["error"])

    with progress:
        yield update
