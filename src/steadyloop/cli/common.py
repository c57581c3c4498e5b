"""What every `steadyloop` command shares, in one place so the commands stay consistent instead
of each carrying its own copy: the exit codes (0 answered, 3 stopped by a limit, 4 paused until
gated calls are approved, 1 error, 130 interrupted), the one-line `Failure`, `guard` (a steadyloop
error or a bad file becomes that line), and `run_to_exit`: run an agent with the live view, SIGTERM
cancelling it as Ctrl-C does, print its answer and exit with the code for how it ended."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from steadyloop.cli.approve import terminal_approver
from steadyloop.cli.elicit import ask_on_terminal
from steadyloop.cli.live import make_view, shown_id
from steadyloop.cli.otlp import otlp_export
from steadyloop.errors import LimitExceeded, SteadyloopError
from steadyloop.events import Event, RunStarted
from steadyloop.result import as_json as as_json_value

if TYPE_CHECKING:
    from steadyloop.agent import Agent
    from steadyloop.result import RunResult

__all__ = [
    "EXIT_ANSWERED",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_LIMIT",
    "EXIT_PAUSED",
    "Failure",
    "guard",
    "on_signal",
    "print_waiting",
    "run_to_exit",
]

T = TypeVar("T")

EXIT_ANSWERED, EXIT_ERROR, EXIT_LIMIT, EXIT_PAUSED, EXIT_INTERRUPTED = 0, 1, 3, 4, 130


class Failure(click.ClickException):
    """A one-line error with an exit code."""

    exit_code = EXIT_ERROR

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def guard(action: Callable[[], T]) -> T:
    """Runs `action`; a steadyloop error or a bad file becomes a one-line error."""
    try:
        return action()
    except SteadyloopError as exc:
        raise Failure(str(exc)) from None
    except OSError as exc:
        raise Failure(f"{exc.strerror or exc}: {exc.filename}") from None


def run_to_exit(
    agent: Agent[Any],
    runner: Callable[[Callable[[Event], None]], Awaitable[RunResult[Any]]],
    as_json: bool,
    run_id: str | None = None,
    ask: bool = False,
) -> NoReturn:
    """Runs the agent with the live view, prints the answer, exits with the code for how the
    run ended. `ask`: gated calls are asked about on the terminal, if there is one."""
    seen: list[str] = [run_id] if run_id else []

    async def go() -> RunResult[Any]:
        try:
            with _sigterm_cancels_this_task(), make_view() as view:
                if ask and sys.stdin.isatty():
                    agent.approver = terminal_approver(view)
                if sys.stdin.isatty():
                    ask_on_terminal(agent, view)  # MCP servers' requests for input

                def on_event(event: Event) -> None:
                    if isinstance(event, RunStarted) and event.run_id and not seen:
                        seen.append(event.run_id)
                    view.show(event)

                return await runner(on_event)
        finally:
            await agent.aclose()

    try:
        with otlp_export():
            result = asyncio.run(go())
    except LimitExceeded as exc:
        _print_answer(exc.result, as_json=as_json, stopped=str(exc))
        sys.exit(EXIT_LIMIT)
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or SIGTERM
        hint = f"; continue with: steadyloop resume {shown_id(seen[0])}" if seen else ""
        click.echo(f"interrupted{hint}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except SteadyloopError as exc:
        hint = f" (run {shown_id(seen[0])})" if seen else ""
        raise Failure(f"{exc}{hint}") from None
    _print_answer(result, as_json=as_json)
    if result.stop_reason == "approval":
        print_waiting(result)
        sys.exit(EXIT_PAUSED)
    sys.exit(EXIT_ANSWERED)


def print_waiting(result: RunResult[Any]) -> None:
    """The calls a paused run waits on, and how to decide them, on stderr."""
    lines = ["waiting for approval:"]
    for call in result.pending:
        arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
        lines.append(f"  {call.call_id}  {call.name}({arguments})")
    first = result.pending[0].call_id
    if result.run_id is None:
        lines.append("the run was not logged (--no-log), so it cannot be resumed")
    else:
        lines.append(
            f"continue with: steadyloop resume {shown_id(result.run_id)} --approve {first} "
            f"(or --deny {first}=REASON), one option per waiting call"
        )
    click.echo("\n".join(lines), err=True)


@contextlib.contextmanager
def on_signal(signum: int, handler: Callable[[], object]) -> Iterator[None]:
    """While in the block, signal `signum` calls `handler` on the running event loop. Without
    signal support (Windows, not the main thread) the block runs as is."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signum, handler)
    except (NotImplementedError, RuntimeError):
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signum)


@contextlib.contextmanager
def _sigterm_cancels_this_task() -> Iterator[None]:
    """While in the block, SIGTERM cancels the running task as Ctrl-C does, so `kill PID` stops a
    run in order (logged as interrupted, resumable, exit code 130) instead of leaving it logged
    as running."""
    task = asyncio.current_task()
    assert task is not None  # entered from a coroutine
    with on_signal(signal.SIGTERM, task.cancel):
        yield


def _print_answer(result: RunResult[Any], *, as_json: bool, stopped: str | None = None) -> None:
    """The answer on stdout (as JSON with `--json`, or when it is typed); a limit stop once on
    stderr either way."""
    if stopped:
        click.echo(f"stopped: {stopped}", err=True)
    output = as_json_value(result.output)
    if not isinstance(output, str) and output is not None and not as_json:
        click.echo(json.dumps(output, ensure_ascii=False))
        return
    if as_json:
        click.echo(
            json.dumps(
                {
                    "output": output,
                    "stop_reason": result.stop_reason,
                    "usage": result.usage.as_json(),
                    "cost_usd": result.usage.cost_usd,
                    "run_id": result.run_id,
                    "stopped": stopped,
                    "pending": [
                        {"call_id": c.call_id, "name": c.name, "arguments": dict(c.arguments)}
                        for c in result.pending
                    ],
                },
                ensure_ascii=False,
            )
        )
        return
    if output:
        click.echo(output)
