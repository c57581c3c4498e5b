"""What a run shows while it works: a live panel on a terminal, plain lines otherwise.

Both read the agent's events and write to stderr, so stdout carries only the answer. How the run
ended (an answer, a limit, an error) is printed once by the command, after the view closes; what
it cost, when the model's price is known, as the run goes and once more at its end.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Protocol

from steadyloop.events import (
    CallDecided,
    Compacted,
    Event,
    MessageAdded,
    ModelFallback,
    ModelRequestStarted,
    ModelRetry,
    RunFinished,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
    ToolsChanged,
)
from steadyloop.messages import ArgumentsError, AssistantMessage, ToolCall

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "LiveView",
    "PlainView",
    "View",
    "format_cost",
    "make_view",
    "shown_id",
    "tools_changed_line",
]

_ARGS_PREVIEW = 60
_DECIDED = {"deferred": "waiting for approval"}


class View(Protocol):
    """Something that shows a run's events as they happen; `paused()` stands aside while a
    question is asked on the terminal."""

    def __enter__(self) -> View: ...
    def __exit__(self, *exc_info: object) -> None: ...
    def show(self, event: Event) -> None: ...
    def paused(self) -> contextlib.AbstractContextManager[None]: ...


def make_view(stream: IO[str] | None = None) -> View:
    """A live panel when `stream` (default stderr) is a terminal, plain lines otherwise."""
    stream = stream or sys.stderr
    return LiveView(stream) if stream.isatty() else PlainView(stream)


def format_cost(cost: float | None) -> str:
    """Dollars to four decimals, to six below a cent; "-" when the price is unknown."""
    if cost is None:
        return "-"
    return f"${cost:.6f}" if cost < 0.01 else f"${cost:.4f}"


def tools_changed_line(data: Mapping[str, Any]) -> str:
    """One line for a toolset whose tools changed: "tools changed (SOURCE): added a, b;
    removed c"."""
    parts = [
        f"{what} {', '.join(data[what])}"
        for what in ("added", "removed", "changed")
        if data.get(what)
    ]
    return f"tools changed ({data['source']}): {'; '.join(parts)}"


def shown_id(run_id: str) -> str:
    """How a run id is shown (`store.ids.short_id`). The log's modules are imported only here:
    a run that is not logged (`--no-log`) has no id to show and does without them."""
    from steadyloop.store.ids import short_id

    return short_id(run_id)


def _arguments(call: ToolCall) -> str:
    try:
        args = call.arguments_json()
    except ArgumentsError:  # not a JSON object: as the model sent it
        args = str(call.arguments)
    args = " ".join(args.split())
    return args if len(args) <= _ARGS_PREVIEW else args[: _ARGS_PREVIEW - 3] + "..."


def _reply_cost(event: Event) -> float | None:
    """What the reply an event adds cost, when it is a reply with a known price."""
    if isinstance(event, MessageAdded) and isinstance(event.message, AssistantMessage):
        usage = event.message.usage
        return usage.cost_usd if usage is not None else None
    return None


class PlainView:
    """One line per step, for logs and pipes."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.cost: float | None = None

    def __enter__(self) -> PlainView:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stream.flush()

    def show(self, event: Event) -> None:
        cost = _reply_cost(event)
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
        line = _plain_line(event)
        if line is not None and self.cost is not None and isinstance(event, ModelRequestStarted):
            line += f" · {format_cost(self.cost)} so far"
        if line is not None:
            print(line, file=self.stream, flush=True)

    def paused(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


def _plain_line(event: Event) -> str | None:
    if isinstance(event, RunStarted) and event.run_id:
        return f"run {shown_id(event.run_id)} · model {event.model}"
    if isinstance(event, ModelRequestStarted):
        return (
            f"turn {event.turn} · context {event.context_tokens:,}/"
            f"{event.max_context_tokens:,} tokens"
        )
    if isinstance(event, ToolCallStarted):
        return f"  → {event.call.name} {_arguments(event.call)}"
    if isinstance(event, ToolCallFinished):
        mark = "✗" if event.is_error else "✓"
        note = " (truncated)" if event.truncated else ""
        return f"  {mark} {event.call.name} {event.duration:.2f}s{note}"
    if isinstance(event, ToolProgress):
        return f"  … {event.call.name} {_progress(event)}"
    if isinstance(event, ToolsChanged):
        return tools_changed_line(
            {"source": event.source, "added": event.added, "removed": event.removed,
             "changed": event.changed}
        )  # fmt: skip
    if isinstance(event, ModelRetry):
        return f"model call failed ({event.error}); attempt {event.attempt} in {event.wait:.1f}s"
    if isinstance(event, ModelFallback):
        return f"⇢ {event.failed} failed ({event.error}); trying {event.next}"
    if isinstance(event, CallDecided):
        return (
            f"  {_DECIDED.get(event.decision, event.decision)}: {event.call.name} [{event.call.id}]"
        )
    if isinstance(event, Compacted):
        return (
            f"compacted: {event.summary.replaced} messages summarised, "
            f"{event.tokens_before:,} → {event.tokens_after:,} tokens"
        )
    if isinstance(event, RunFinished) and event.result.usage.cost_usd is not None:
        return f"cost {format_cost(event.result.usage.cost_usd)}"
    return None


def _progress(event: ToolProgress) -> str:
    """How far a call got, as the server said: "2/3 copying" (or "2 copying" without a total)."""
    done = f"{event.progress:g}" + (f"/{event.total:g}" if event.total is not None else "")
    return f"{done} {event.message}" if event.message else done


class LiveView:
    """A rich panel: turn, a context bar, and each tool call with spinner, time and ✓/✗."""

    def __init__(self, stream: IO[str]) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console(file=stream, stderr=stream is sys.stderr)
        self.turn = 0
        self.tokens = 0
        self.max_tokens = 1
        self.cost: float | None = None
        self.calls: dict[str, tuple[ToolCall, float, ToolCallFinished | None]] = {}
        self.progress: dict[str, str] = {}  # what a running call last said of its progress
        self.notes: list[str] = []
        # get_renderable: re-rendered on every refresh, so running calls' timers move
        self.live = Live(console=self.console, refresh_per_second=8, get_renderable=self._render)

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.live.refresh()
        self.live.__exit__(None, None, None)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        self.live.stop()
        try:
            yield
        finally:
            self.live.start()

    def show(self, event: Event) -> None:
        cost = _reply_cost(event)
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
        if isinstance(event, ModelRequestStarted):
            self.turn = event.turn
            self.tokens, self.max_tokens = event.context_tokens, event.max_context_tokens
            self.calls.clear()
            self.progress.clear()
        elif isinstance(event, ToolProgress):
            self.progress[event.call.id] = _progress(event)
        elif isinstance(event, ToolCallStarted):
            self.calls[event.call.id] = (event.call, time.monotonic(), None)
        elif isinstance(event, ToolCallFinished):
            call, started, _ = self.calls.get(event.call.id, (event.call, time.monotonic(), None))
            self.calls[event.call.id] = (call, started, event)
        else:
            line = _plain_line(event)
            if line is not None and not isinstance(event, RunStarted):
                self.notes.append(line)
            elif line is not None:
                self.console.print(f"[dim]{line}[/dim]")
        self.live.refresh()

    def _render(self) -> RenderableType:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.spinner import Spinner
        from rich.table import Table

        header = Table.grid(padding=(0, 1))
        header.add_row(
            f"[bold]turn {self.turn}[/bold]",
            ProgressBar(
                total=self.max_tokens, completed=min(self.tokens, self.max_tokens), width=30
            ),
            f"{self.tokens:,}/{self.max_tokens:,} tokens",
            format_cost(self.cost) if self.cost is not None else "",
        )
        calls = Table.grid(padding=(0, 1))
        for call, started, finished in self.calls.values():
            if finished is None:
                status: RenderableType = Spinner("dots")
                timing = f"{time.monotonic() - started:.1f}s"
                if call.id in self.progress:
                    timing += f"  {self.progress[call.id]}"
            else:
                status = "[red]✗[/red]" if finished.is_error else "[green]✓[/green]"
                timing = f"{finished.duration:.2f}s"
            calls.add_row(status, f"[cyan]{call.name}[/cyan]", _arguments(call), timing)
        notes = [f"[yellow]{note}[/yellow]" for note in self.notes[-3:]]
        return Group(header, calls, *notes)
