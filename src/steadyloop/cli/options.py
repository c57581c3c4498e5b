"""Options more than one command takes: `--set KEY=VALUE` (model settings sent with every
request), `--store PATH_OR_URL` (the run log) and `--tools FILE.py` for a logged run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

__all__ = ["logged_tools_option", "parse_settings", "settings_option", "store_option"]


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
