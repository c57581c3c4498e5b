"""Options more than one command takes: `--set KEY=VALUE` (model settings sent with every
request), `--store PATH_OR_URL` (the run log), `--tools FILE.py` for a logged run, and the
agent's tools (`--tools`, `--mcp`, `--mcp-url`) for a command that builds one."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

__all__ = [
    "agent_tools_options",
    "logged_tools_option",
    "parse_settings",
    "settings_option",
    "store_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def parse_settings(values: Sequence[str]) -> dict[str, Any]:
    """`--set KEY=VALUE` options as a mapping: VALUE read as JSON where it is JSON
    (`0`, `true`, `{"type": "auto"}`), as text otherwise (`required`)."""
    settings: dict[str, Any] = {}
    for item in values:
        key, equals, raw = item.partition("=")
        if not equals or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        try:
            settings[key.strip()] = json.loads(raw)
        except ValueError:
            settings[key.strip()] = raw
    return settings


settings_option = click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    callback=lambda _ctx, _param, values: parse_settings(values),
    help="a model setting sent with each request, VALUE as JSON or plain text "
    "(e.g. --set temperature=0 --set tool_choice=required); repeatable",
)

store_option = click.option(
    "--store",
    "store_url",
    default=None,
    metavar="PATH_OR_URL",
    help="the run log: a SQLite path, sqlite:///PATH or postgresql://... "
    "(default: $STEADYLOOP_HOME/runs.db)",
)

logged_tools_option = click.option(
    "--tools",
    "tool_files",
    multiple=True,
    metavar="FILE.py",
    help="tool files to use instead of the ones the run logged",
)


def agent_tools_options(command: F) -> F:
    """`--tools FILE.py`, `--mcp 'CMD ARGS'` and `--mcp-url URL`: where the agent a command
    builds finds its tools (`tool_files`, `mcp` and `mcp_url`, each a tuple)."""
    for option in reversed(_AGENT_TOOLS):
        command = option(command)
    return command


_AGENT_TOOLS = (
    click.option(
        "--tools",
        "tool_files",
        multiple=True,
        metavar="FILE.py",
        help="a Python file whose @tool functions (or `tools` list) the agent may call",
    ),
    click.option(
        "--mcp",
        multiple=True,
        metavar="'CMD ARGS'",
        help="an MCP server to start over stdio; its tools join --tools",
    ),
    click.option(
        "--mcp-url", multiple=True, metavar="URL", help="an MCP server over streamable HTTP"
    ),
)
