"""The `steadyloop` commands. Exit codes: 0 answered, 3 stopped by a limit, 4 paused until
gated calls are approved (`resume --approve`), 1 error, 130 interrupted (the run can be
resumed), 2 bad usage (`cli.common` holds them). Errors are one line on stderr, never a
traceback."""

from __future__ import annotations

import asyncio
import importlib
import re
import sys
from typing import TYPE_CHECKING, Any, BinaryIO

import click

from steadyloop.cli.common import EXIT_ERROR, guard, run_to_exit
from steadyloop.cli.options import (
    agent_tools_options,
    logged_tools_option,
    settings_option,
    store_option,
)
from steadyloop.cli.setup import (
    build_agent,
    load_tools,
    open_store,
    store_path,
)
from steadyloop.limits import Limits
from steadyloop.media import Image

if TYPE_CHECKING:
    from steadyloop.store import RunInfo, RunLog

__all__ = ["cli"]


# The commands that live in their own modules: name -> (module, attribute).
ELSEWHERE = {
    "batch": ("steadyloop.cli.batch", "batch"),
    "chat": ("steadyloop.cli.chat", "chat"),
    "eval": ("steadyloop.cli.eval", "eval_"),
    "mcp": ("steadyloop.cli.mcp_serve", "mcp_group"),
}


class _Commands(click.Group):
    """The command group, with the commands of ELSEWHERE imported only when named or listed:
    `steadyloop run` loads none of them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *ELSEWHERE})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in ELSEWHERE:
            module, name = ELSEWHERE[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), name)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="steadyloop")
def cli() -> None:
    """Run LLM agents that hold up: steadyloop run --tools tools.py --model test "..." """


@cli.command()
@click.argument("prompt")
@agent_tools_options
@click.option(
    "--model",
    default=None,
    help="model spec: openai:MODEL, openai-responses:MODEL, anthropic:MODEL, "
    "google:MODEL, vertex:MODEL, bedrock:MODEL, ollama:MODEL, fallback:SPEC,SPEC... or test "
    "(default: $STEADYLOOP_MODEL)",
)
@click.option("--instructions", default=None, help="the system prompt")
@click.option("--max-turns", type=click.IntRange(min=1), default=20, show_default=True)
@click.option(
    "--max-context-tokens", type=click.IntRange(min=1), default=150_000, show_default=True
)
@click.option(
    "--max-tool-calls",
    type=click.IntRange(min=1),
    default=None,
    help="tool calls the run may make; past them it stops (exit code 3)",
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
@click.option(
    "--session",
    default=None,
    metavar="NAME",
    help="go on with this session's conversation (a new name starts one)",
)
@click.option(
    "-c",
    "--continue",
    "continue_",
    is_flag=True,
    help="go on with the newest run's conversation (its session, if it has one)",
)
@store_option
def run(prompt: str, tool_files: tuple[str, ...], mcp: tuple[str, ...], mcp_url: tuple[str, ...],
        model: str | None, instructions: str | None, max_turns: int, max_context_tokens: int,
        max_tool_calls: int | None, max_tool_output: int, settings: dict[str, Any],
        output: str | None, images: tuple[str, ...], ask: bool, as_json: bool, no_log: bool,
        session: str | None, continue_: bool, store_url: str | None) -> None:  # fmt: skip
    """Run an agent on PROMPT ('-' reads it from stdin) and print its answer."""
    if continue_ and session is not None:
        raise click.UsageError("give --session or -c/--continue, not both")
    if no_log and (continue_ or session is not None):
        raise click.UsageError("--session and -c/--continue read the run log: drop --no-log")
    if session == "":
        raise click.UsageError("--session needs a name")
    chosen: dict[str, Any] = {"model": model, "tool_files": list(tool_files), "mcp": list(mcp),
                              "mcp_url": list(mcp_url), "instructions": instructions}  # fmt: skip
    store: RunLog | None = None
    previous: RunInfo | None = None
    fork_from: str | None = None
    if not no_log:
        from steadyloop.cli.chat import continued_run, logged_settings

        log = store = guard(lambda: open_store(store_url))
        previous = guard(lambda: continued_run(log, session, continue_))
        chosen = logged_settings(previous, chosen)
    if continue_ and previous is not None:
        session, fork_from = previous.session, None if previous.session else previous.id
    if prompt == "-":
        prompt = _read_stdin().strip()
        if not prompt:
            raise click.UsageError("the prompt on stdin was empty")
    prompt = _valid_text(prompt)
    parts: list[str | Image] = [prompt, *(_image(file) for file in images)]
    agent = guard(
        lambda: build_agent(
            **chosen,
            limits=Limits(
                max_turns=max_turns,
                max_context_tokens=max_context_tokens,
                max_tool_calls=max_tool_calls,
            ),
            max_tool_output=max_tool_output,
            store=store,
            settings=settings,
            output=output,
        )
    )
    run_to_exit(
        agent,
        lambda notify: agent.run(parts, on_event=notify, session=session, fork_from=fork_from),
        as_json,
        ask=ask,
    )


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
    from steadyloop.cli.decide import check_decisions, decisions_from_options, resuming_agent
    from steadyloop.resume import waiting_calls
    from steadyloop.store.ids import find_run

    if factory is not None and tool_files:
        raise click.UsageError("give --agent or --tools, not both: the agent has its own tools")
    decisions = decisions_from_options(approved, denied, edited)
    store = guard(lambda: open_store(store_url))
    info = guard(lambda: find_run(store, run_id))
    waiting = guard(lambda: waiting_calls(store, info.id))
    guard(lambda: check_decisions(info, waiting, decisions))
    agent = guard(
        lambda: resuming_agent(info, store, waiting, model=model, factory=factory, tools=tool_files)
    )
    run_to_exit(
        agent,
        lambda notify: agent.resume(info.id, decisions=decisions, on_event=notify),
        as_json,
        run_id=info.id,
    )


@cli.command()
@click.option("-n", "--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--batch", "batch_name", metavar="NAME", help="count the runs of a batch by status")
@click.option("--session", metavar="NAME", help="list the runs of this session, oldest first")
@store_option
def logs(limit: int, batch_name: str | None, session: str | None, store_url: str | None) -> None:
    """List recent runs: id, when, model, turns, tokens, how each ended."""
    from steadyloop.cli.batch import render_batch
    from steadyloop.cli.show import render_runs

    if batch_name is not None and session is not None:
        raise click.UsageError("give --batch or --session, not both")
    if store_url is None and not store_path().exists():
        empty = f"no runs in session {session}" if session is not None else render_runs([])
        click.echo(render_batch(batch_name, []) if batch_name else empty)
        return
    store = guard(lambda: open_store(store_url, read_only=True))
    if session is not None:
        turns = guard(lambda: store.session(session))
        click.echo(render_runs(turns) if turns else f"no runs in session {session}")
        return
    if batch_name is not None:
        runs = guard(lambda: store.runs_with_prefix(f"{batch_name}:", limit=sys.maxsize))
        click.echo(render_batch(batch_name, runs))
        return
    click.echo(render_runs(guard(lambda: store.runs(limit))))


@cli.command()
@click.argument("run_id", metavar="RUN")
@click.option("--json", "as_json", is_flag=True, help="the run and all its events as JSON")
@click.option("--full", is_flag=True, help="also print untruncated tool output")
@store_option
def show(run_id: str, as_json: bool, full: bool, store_url: str | None) -> None:
    """Show a run's transcript: errors, truncations, compactions and stops marked."""
    from steadyloop.cli.show import render_transcript, transcript_json
    from steadyloop.store.ids import find_run

    store = guard(lambda: open_store(store_url, read_only=True))
    info = guard(lambda: find_run(store, run_id))
    text = guard(
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
    from steadyloop.store.ids import find_run, short_id
    from steadyloop.toolfile import load_from_file

    store = guard(lambda: open_store(store_url, read_only=True))
    info = guard(lambda: find_run(store, run_id))
    files = tool_files or tuple(info.config.get("tool_files", ()))
    tools = [] if recorded_tools else guard(lambda: load_tools(files))
    output = output or info.config.get("output")
    answer_type = guard(lambda: load_from_file(output)) if output else None
    report = guard(
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
    from steadyloop.store.ids import find_run

    store = guard(lambda: open_store(store_url, read_only=True))
    info = guard(lambda: find_run(store, run_id))
    for line in guard(lambda: list(store.to_jsonl(info.id))):
        output.write(line + "\n")


@cli.command(name="import")
@click.argument("source", type=click.File("r"))
@store_option
def import_(source: Any, store_url: str | None) -> None:
    """Add a run exported with `steadyloop export` to the run log."""
    store = guard(lambda: open_store(store_url))
    run_id = guard(lambda: store.from_jsonl(source))
    click.echo(run_id)


@cli.command()
@click.argument("file", metavar="FILE.py")
def lint(file: str) -> None:
    """Score the tool descriptions in FILE.py; exit 1 if any has an error."""
    from steadyloop.lint import lint_tools

    report = lint_tools(guard(lambda: load_tools([file])))
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

    guard(
        lambda: serve(
            log or store_path(), host=host, port=port, open_browser=open_browser, say=click.echo
        )
    )


def _image(file: str) -> Image:
    return guard(lambda: Image.from_path(file))


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
