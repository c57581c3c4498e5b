"""The `steadyloop` commands. Exit codes: 0 answered, 3 stopped by a limit, 4 paused until
gated calls are approved (`resume --approve`), 1 error, 130 interrupted (the run can be
resumed), 2 bad usage. Errors are one line on stderr, never a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, BinaryIO, NoReturn, TypeVar

import click

from steadyloop.agent import Agent
from steadyloop.cli.approve import terminal_approver
from steadyloop.cli.batch import batch, render_batch
from steadyloop.cli.decide import check_decisions, decisions_from_options, resuming_agent
from steadyloop.cli.ids import find_run, short_id
from steadyloop.cli.live import make_view
from steadyloop.cli.options import logged_tools_option, settings_option, store_option
from steadyloop.cli.otlp import otlp_export
from steadyloop.cli.setup import (
    build_agent,
    load_tools,
    open_store,
    store_path,
)
from steadyloop.cli.show import render_runs, render_transcript, transcript_json
from steadyloop.errors import LimitExceeded, SteadyloopError
from steadyloop.events import Event, RunStarted
from steadyloop.limits import Limits
from steadyloop.media import Image
from steadyloop.output import as_json as as_json_value
from steadyloop.result import RunResult
from steadyloop.resume import waiting_calls

__all__ = ["cli"]

T = TypeVar("T")

EXIT_ANSWERED, EXIT_ERROR, EXIT_LIMIT, EXIT_PAUSED, EXIT_INTERRUPTED = 0, 1, 3, 4, 130


class Failure(click.ClickException):
    """A one-line error with an exit code."""

    exit_code = EXIT_ERROR

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="steadyloop")
def cli() -> None:
    """Run LLM agents that hold up: steadyloop run --tools tools.py --model test "..." """


cli.add_command(batch)


@cli.command()
@click.argument("prompt")
@click.option(
    "--tools",
    "tool_files",
    multiple=True,
    metavar="FILE.py",
    help="a Python file whose @tool functions (or `tools` list) the agent may call",
)
@click.option(
    "--mcp",
    multiple=True,
    metavar="'CMD ARGS'",
    help="an MCP server to start over stdio; its tools join --tools",
)
@click.option("--mcp-url", multiple=True, metavar="URL", help="an MCP server over streamable HTTP")
@click.option(
    "--model",
    default=None,
    help="model spec: openai:MODEL, openai-responses:MODEL, anthropic:MODEL, "
    "ollama:MODEL or test (default: $STEADYLOOP_MODEL)",
)
@click.option("--instructions", default=None, help="the system prompt")
@click.option("--max-turns", type=click.IntRange(min=1), default=20, show_default=True)
@click.option(
    "--max-context-tokens", type=click.IntRange(min=1), default=150_000, show_default=True
)
@click.option(
    "--max-tool-output",
    type=click.IntRange(min=0),
    default=8_000,
    show_default=True,
    help="characters of each tool result the model reads",
)
@settings_option
@click.option(
    "--output",
    "output",
    metavar="FILE.py:NAME",
    help="the answer's type (a pydantic model, dataclass, ...) defined in FILE.py; the answer "
    "is printed as JSON",
)
@click.option(
    "--image",
    "images",
    multiple=True,
    metavar="FILE",
    help="a PNG, JPEG, GIF or WebP image to send after the prompt (repeatable)",
)
@click.option(
    "--approve",
    "ask",
    is_flag=True,
    help="on a terminal, ask y/n/e before each call of a tool made with @tool(approve=...); "
    "otherwise such a call pauses the run (exit code 4) for `steadyloop resume --approve`",
)
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
@click.option("--no-log", is_flag=True, help="do not write the run log")
@store_option
def run(prompt: str, tool_files: tuple[str, ...], mcp: tuple[str, ...], mcp_url: tuple[str, ...],
        model: str | None, instructions: str | None, max_turns: int, max_context_tokens: int,
        max_tool_output: int, settings: dict[str, Any], output: str | None,
        images: tuple[str, ...], ask: bool, as_json: bool, no_log: bool,
        store_url: str | None) -> None:  # fmt: skip
    """Run an agent on PROMPT ('-' reads it from stdin) and print its answer."""
    if prompt == "-":
        prompt = _read_stdin().strip()
        if not prompt:
            raise click.UsageError("the prompt on stdin was empty")
    prompt = _valid_text(prompt)
    parts: list[str | Image] = [prompt, *(_image(file) for file in images)]
    agent = _guard(
        lambda: build_agent(
            model=model,
            tool_files=tool_files,
            mcp=mcp,
            mcp_url=mcp_url,
            instructions=instructions,
            limits=Limits(max_turns=max_turns, max_context_tokens=max_context_tokens),
            max_tool_output=max_tool_output,
            store=None if no_log else open_store(store_url),
            settings=settings,
            output=output,
        )
    )
    _run_to_exit(agent, lambda notify: agent.run(parts, on_event=notify), as_json, ask=ask)


@cli.command()
@click.argument("run_id", metavar="RUN")
@click.option("--model", default=None, help="continue with another model spec")
@click.option("--approve", "approved", multiple=True, metavar="CALL", help="run this waiting call")
@click.option(
    "--deny",
    "denied",
    multiple=True,
    metavar="CALL=REASON",
    help="do not run this waiting call; the model reads the reason",
)
@click.option(
    "--edit",
    "edited",
    multiple=True,
    metavar="CALL=JSON",
    help="run this waiting call with these arguments instead (a JSON object)",
)
@click.option(
    "--agent",
    "factory",
    default=None,
    metavar="MODULE:FUNCTION",
    help="a function that returns the run's Agent, with its tools (default: the batch's "
    "factory, or the tools and settings the run logged; the current directory is importable)",
)
@logged_tools_option
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
@store_option
def resume(
    run_id: str, model: str | None, approved: tuple[str, ...], denied: tuple[str, ...],
    edited: tuple[str, ...], factory: str | None, tool_files: tuple[str, ...], as_json: bool,
    store_url: str | None,
) -> None:  # fmt: skip
    """Continue a run that was killed, interrupted or failed, or one paused for approval
    (decide each waiting call with --approve, --deny or --edit)."""
    if factory is not None and tool_files:
        raise click.UsageError("give --agent or --tools, not both: the agent has its own tools")
    decisions = decisions_from_options(approved, denied, edited)
    store = _guard(lambda: open_store(store_url))
    info = _guard(lambda: find_run(store, run_id))
    waiting = _guard(lambda: waiting_calls(store, info.id))
    _guard(lambda: check_decisions(info, waiting, decisions))
    agent = _guard(
        lambda: resuming_agent(info, store, waiting, model=model, factory=factory, tools=tool_files)
    )
    _run_to_exit(
        agent,
        lambda notify: agent.resume(info.id, decisions=decisions, on_event=notify),
        as_json,
        run_id=info.id,
    )


@cli.command()
@click.option("-n", "--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--batch", "batch_name", metavar="NAME", help="count the runs of a batch by status")
@store_option
def logs(limit: int, batch_name: str | None, store_url: str | None) -> None:
    """List recent runs: id, when, model, turns, tokens, how each ended."""
    if store_url is None and not store_path().exists():
        click.echo(render_batch(batch_name, []) if batch_name else render_runs([]))
        return
    store = _guard(lambda: open_store(store_url, read_only=True))
    if batch_name is not None:
        runs = _guard(lambda: store.runs_with_prefix(f"{batch_name}:", limit=sys.maxsize))
        click.echo(render_batch(batch_name, runs))
        return
    click.echo(render_runs(_guard(lambda: store.runs(limit))))


@cli.command()
@click.argument("run_id", metavar="RUN")
@click.option("--json", "as_json", is_flag=True, help="the run and all its events as JSON")
@click.option("--full", is_flag=True, help="also print untruncated tool output")
@store_option
def show(run_id: str, as_json: bool, full: bool, store_url: str | None) -> None:
    """Show a run's transcript: errors, truncations, compactions and stops marked."""
    store = _guard(lambda: open_store(store_url, read_only=True))
    info = _guard(lambda: find_run(store, run_id))
    text = _guard(
        lambda: (
            transcript_json(store, info.id)
            if as_json
            else render_transcript(store, info.id, full=full)
        )
    )
    click.echo(text)


@cli.command()
@click.argument("run_id", metavar="RUN")
@logged_tools_option
@click.option(
    "--recorded-tools",
    is_flag=True,
    help="answer tool calls with the logged outputs instead of running the tools",
)
@click.option(
    "--output",
    "output",
    metavar="FILE.py:NAME",
    help="the answer's type, instead of the one the run logged (`run --output`)",
)
@store_option
def replay(run_id: str, tool_files: tuple[str, ...], recorded_tools: bool, output: str | None,
           store_url: str | None) -> None:  # fmt: skip
    """Re-run a logged run with its recorded model replies; report where it diverges."""
    from steadyloop.replay import replay_run
    from steadyloop.toolfile import load_from_file

    store = _guard(lambda: open_store(store_url, read_only=True))
    info = _guard(lambda: find_run(store, run_id))
    files = tool_files or tuple(info.config.get("tool_files", ()))
    tools = [] if recorded_tools else _guard(lambda: load_tools(files))
    output = output or info.config.get("output")
    answer_type = _guard(lambda: load_from_file(output)) if output else None
    report = _guard(
        lambda: asyncio.run(
            replay_run(store, info.id, tools, recorded_tools=recorded_tools, output=answer_type)
        )
    )
    if report.divergence is None:
        click.echo(f"replay of {short_id(info.id)} matches the log ({report.entries} entries)")
        return
    click.echo(f"replay of {short_id(info.id)} diverges from the log: {report.divergence}")
    sys.exit(EXIT_ERROR)


@cli.command()
@click.argument("run_id", metavar="RUN")
@click.option("-o", "--output", type=click.File("w"), default="-", help="file (default stdout)")
@store_option
def export(run_id: str, output: Any, store_url: str | None) -> None:
    """Write a run as JSON lines (loss-free; `steadyloop import` reads it back)."""
    store = _guard(lambda: open_store(store_url, read_only=True))
    info = _guard(lambda: find_run(store, run_id))
    for line in _guard(lambda: list(store.to_jsonl(info.id))):
        output.write(line + "\n")


@cli.command(name="import")
@click.argument("source", type=click.File("r"))
@store_option
def import_(source: Any, store_url: str | None) -> None:
    """Add a run exported with `steadyloop export` to the run log."""
    store = _guard(lambda: open_store(store_url))
    run_id = _guard(lambda: store.from_jsonl(source))
    click.echo(run_id)


@cli.command()
@click.argument("file", metavar="FILE.py")
def lint(file: str) -> None:
    """Score the tool descriptions in FILE.py; exit 1 if any has an error."""
    from steadyloop.lint import lint_tools

    report = lint_tools(_guard(lambda: load_tools([file])))
    click.echo(report.render())
    if report.has_errors:
        sys.exit(EXIT_ERROR)


@cli.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="the port to listen on (0 picks a free one)",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="the address to listen on")
@click.option(
    "--store",
    "log",
    default=None,
    metavar="PATH_OR_URL",
    help="the run log: a SQLite path, sqlite:///PATH or postgresql://... "
    "(default: $STEADYLOOP_HOME/runs.db)",
)
@click.option("--open", "open_browser", is_flag=True, help="open the page in a web browser")
def ui(port: int, host: str, log: str | None, open_browser: bool) -> None:
    """Browse the run log in a local, read-only web page (pip install 'steadyloop[ui]')."""
    from steadyloop.ui.server import serve

    _guard(
        lambda: serve(
            log or store_path(), host=host, port=port, open_browser=open_browser, say=click.echo
        )
    )


def _image(file: str) -> Image:
    return _guard(lambda: Image.from_path(file))


def _guard(action: Callable[[], T]) -> T:
    """Runs `action`; a steadyloop error or a bad file becomes a one-line error."""
    try:
        return action()
    except SteadyloopError as exc:
        raise Failure(str(exc)) from None
    except OSError as exc:
        raise Failure(f"{exc.strerror or exc}: {exc.filename}") from None


def _read_stdin() -> str:
    """All of stdin; bytes its encoding cannot decode become U+FFFD instead of an error."""
    binary: BinaryIO | None = getattr(sys.stdin, "buffer", None)
    if binary is None:  # a text-only stream
        return sys.stdin.read()
    return binary.read().decode(sys.stdin.encoding or "utf-8", errors="replace")


def _valid_text(text: str) -> str:
    """`text` with U+FFFD for each lone surrogate: the form in which Python hands over argv bytes
    that are not valid in the locale's encoding. They cannot be encoded, so the run could not be
    sent or logged."""
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


def _run_to_exit(
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
        hint = f"; continue with: steadyloop resume {short_id(seen[0])}" if seen else ""
        click.echo(f"interrupted{hint}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except SteadyloopError as exc:
        hint = f" (run {short_id(seen[0])})" if seen else ""
        raise Failure(f"{exc}{hint}") from None
    _print_answer(result, as_json=as_json)
    if result.stop_reason == "approval":
        _print_waiting(result)
        sys.exit(EXIT_PAUSED)
    sys.exit(EXIT_ANSWERED)


def _print_waiting(result: RunResult[Any]) -> None:
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
            f"continue with: steadyloop resume {short_id(result.run_id)} --approve {first} "
            f"(or --deny {first}=REASON), one option per waiting call"
        )
    click.echo("\n".join(lines), err=True)


@contextlib.contextmanager
def _sigterm_cancels_this_task() -> Iterator[None]:
    """While in the block, SIGTERM cancels the running task as Ctrl-C does, so `kill PID` stops a
    run in order (logged as interrupted, resumable, exit code 130) instead of leaving it logged
    as running. Without signal support (Windows, not the main thread) the block runs as is."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None  # entered from a coroutine
    try:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError):
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


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
