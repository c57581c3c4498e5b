"""`steadyloop chat`: a conversation on the terminal, each line one logged run of a session; and
what `run --session` and `run -c` share with it: the run a command continues, and the settings
it takes from that run when the command line does not give them.

On a terminal the agent's work shows live on stderr and its answer on stdout; Ctrl-C during a
turn stops that turn only (its run is logged as interrupted and the next line continues from
it), Ctrl-C at the prompt discards the line, and Ctrl-D leaves. Without a terminal each line of
stdin is a prompt (blank lines skipped) and the end of input leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
import uuid
from typing import Any

import click

from steadyloop.cli.approve import InputLines, terminal_approver
from steadyloop.cli.common import (
    EXIT_ANSWERED,
    EXIT_INTERRUPTED,
    EXIT_PAUSED,
    guard,
    on_signal,
    print_waiting,
)
from steadyloop.cli.live import make_view
from steadyloop.cli.options import agent_tools_options, settings_option, store_option
from steadyloop.cli.setup import build_agent, open_store
from steadyloop.errors import ConfigError, LimitExceeded, SteadyloopError
from steadyloop.limits import Limits
from steadyloop.result import RunResult
from steadyloop.store import RunInfo, RunLog

__all__ = ["chat", "continued_run", "logged_settings"]

PROMPT = "> "
# The command-line settings a continued run takes from the run it continues when not given.
CONTINUED = ("model", "tool_files", "mcp", "mcp_url", "instructions")


def continued_run(store: RunLog, session: str | None, newest: bool) -> RunInfo | None:
    """The run a command continues: the session's latest run (None for a new session), or with
    `newest` the log's newest run that is not a sub-agent's (`ConfigError` when there is none)."""
    if session is not None:
        return store.latest(session)
    if not newest:
        return None
    for count in (50, 1000, sys.maxsize):
        candidates = [run for run in store.runs(count) if run.parent_run_id is None]
        if candidates or len(store.runs(count)) < count:
            break
    if not candidates:
        raise ConfigError(f"no run to continue: {store.location} has no runs yet")
    return candidates[0]


def logged_settings(info: RunInfo | None, given: dict[str, Any]) -> dict[str, Any]:
    """`given` (the command line's settings by `CONTINUED` name, None or empty when not given),
    completed from run `info`'s logged settings."""
    if info is None:
        return given
    settings = dict(given)
    for name in CONTINUED:
        if not settings.get(name) and info.config.get(name):
            settings[name] = info.config[name]
    return settings


@click.command()
@click.option("--session", default=None, metavar="NAME", help="the session to go on with "
              "(default: a new one, named chat-...)")  # fmt: skip
@agent_tools_options
@click.option("--model", default=None, help="model spec (default: the session's, else "
              "$STEADYLOOP_MODEL)")  # fmt: skip
@click.option("--instructions", default=None, help="the system prompt")
@click.option("--max-turns", type=click.IntRange(min=1), default=20, show_default=True,
              help="model calls each line's run may make")  # fmt: skip
@click.option(
    "--max-context-tokens", type=click.IntRange(min=1), default=150_000, show_default=True
)
@settings_option
@store_option
def chat(session: str | None, tool_files: tuple[str, ...], mcp: tuple[str, ...],
         mcp_url: tuple[str, ...], model: str | None, instructions: str | None, max_turns: int,
         max_context_tokens: int, settings: dict[str, Any],
         store_url: str | None) -> None:  # fmt: skip
    """Talk with an agent: each line is a prompt, each answer goes on the same session."""
    if session == "":
        raise click.UsageError("--session needs a name")
    store = guard(lambda: open_store(store_url))
    name = session or f"chat-{uuid.uuid4().hex[:12]}"
    latest = guard(lambda: continued_run(store, name, newest=False))
    given = {"model": model, "tool_files": list(tool_files), "mcp": list(mcp),
             "mcp_url": list(mcp_url), "instructions": instructions}  # fmt: skip
    chosen = logged_settings(latest, given)
    agent = guard(
        lambda: build_agent(
            **chosen,
            limits=Limits(max_turns=max_turns, max_context_tokens=max_context_tokens),
            store=store,
            settings=settings,
        )
    )
    click.echo(f"session {name}", err=True)
    terminal = sys.stdin.isatty()
    code = asyncio.run(_converse(agent, name, terminal))
    sys.exit(code)


async def _converse(agent: Any, session: str, terminal: bool) -> int:
    """Runs each line as a turn of `session` until the end of input; the exit code."""
    lines = InputLines(sys.stdin.fileno()) if terminal else None
    turn: asyncio.Task[RunResult[Any] | None] | None = None
    reading: asyncio.Task[str] | None = None

    def interrupt() -> None:
        """Ctrl-C: stops the running turn, or discards the line being typed."""
        if turn is not None and not turn.done():
            turn.cancel()
        elif reading is not None and not reading.done():
            reading.cancel()

    try:
        with on_signal(signal.SIGINT, interrupt):  # Ctrl-C does not stop the chat
            while True:
                if terminal:
                    _say(PROMPT, end="")
                reading = asyncio.ensure_future(_next_line(lines))
                try:
                    line = await reading
                except EOFError:
                    if terminal:
                        _say("")
                    return EXIT_ANSWERED
                except asyncio.CancelledError:
                    if not reading.cancelled():
                        raise
                    if not terminal:  # Ctrl-C while lines are piped in: the chat ends
                        _say("interrupted")
                        return EXIT_INTERRUPTED
                    _say("")  # Ctrl-C at the prompt: the line is dropped
                    continue
                if not line.strip():
                    continue
                turn = asyncio.ensure_future(_turn(agent, line, session, terminal))
                try:
                    result = await turn
                except asyncio.CancelledError:
                    if not turn.cancelled():
                        raise
                    _say("stopped this turn; the next line goes on from where it was")
                    continue
                if result is not None and result.stop_reason == "approval" and not terminal:
                    return EXIT_PAUSED
    finally:
        await agent.aclose()


async def _next_line(lines: InputLines | None) -> str:
    """The next line typed (`lines`, on a terminal) or piped in; `EOFError` at the end."""
    if lines is not None:
        return await lines.next()
    # A thread of its own that nothing waits for: the chat may end while it is still reading.
    loop = asyncio.get_running_loop()
    read: asyncio.Future[str] = loop.create_future()

    def deliver(line: str) -> None:
        if not read.done():
            read.set_result(line)

    def reader() -> None:
        line = sys.stdin.readline()
        with contextlib.suppress(RuntimeError):  # the chat has ended meanwhile
            loop.call_soon_threadsafe(deliver, line)

    threading.Thread(target=reader, name="steadyloop-chat-input", daemon=True).start()
    line = await read
    if not line:
        raise EOFError
    return line.rstrip("\n")


async def _turn(agent: Any, line: str, session: str, terminal: bool) -> RunResult[Any] | None:
    """One line as one run of the session, its work shown live on stderr, its answer printed
    on stdout; a limit stop or a failure is said on stderr (the chat goes on)."""
    try:
        with make_view() as view:
            if terminal:
                agent.approver = terminal_approver(view)
            result: RunResult[Any] = await agent.run(line, session=session, on_event=view.show)
    except LimitExceeded as exc:
        if exc.result is not None and exc.result.text:
            click.echo(exc.result.text)
        _say(f"stopped: {exc}")
        return None
    except SteadyloopError as exc:  # a failed turn, or a session waiting for approval
        _say(f"error: {exc}")
        return None
    if result.stop_reason == "approval":
        print_waiting(result)
    elif result.text or result.output:
        click.echo(result.output if isinstance(result.output, str) else result.text)
    return result


def _say(text: str, end: str = "\n") -> None:
    click.echo(text, err=True, nl=False)
    click.echo(end, err=True, nl=False)
