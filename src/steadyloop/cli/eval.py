"""`steadyloop eval`: an agent over a dataset, scored, with a table; exit 1 below the bar (CI)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Literal, cast

import click

from steadyloop.cli.batch import chosen_engine, importable_here
from steadyloop.cli.common import EXIT_ERROR, EXIT_INTERRUPTED, guard
from steadyloop.cli.options import settings_option, store_option
from steadyloop.errors import ConfigError

__all__ = ["eval_", "parse_scorer"]

MAX_BAD_SHOWN = 20


@click.command(name="eval")
@click.argument("dataset", metavar="DATASET.jsonl", type=click.Path(dir_okay=False))
@click.option(
    "--agent",
    "factory",
    required=True,
    metavar="MODULE:FUNCTION",
    help="a function that returns the Agent (the current directory is importable)",
)
@click.option(
    "--scorer",
    "scorer_specs",
    multiple=True,
    metavar="SPEC",
    help="exact_match, contains[:TEXT], regex:PATTERN, json_equal, tool_called:TOOL, "
    "no_tool_errors, max_turns:N, max_cost:USD, max_latency:SECONDS, max_tokens:N, or "
    "MODULE:NAME (a scorer, a Judge, a function or a list of them); repeatable",
)
@click.option("--name", default=None, help="the eval's name (default: DATASET_STEM-FUNCTION)")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--compare",
    "base",
    default=None,
    metavar="OTHER",
    help="an eval's name in the log, or MODULE:FUNCTION (evaluated now on the same cases)",
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 1),
    default=None,
    help="exit 1 when the pass rate is below this (0 to 1)",
)
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@store_option
@click.option("--concurrency", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS", help="run on Ray")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Ray workers")
@click.option(
    "--rpm", type=click.FloatRange(min=0, min_open=True), default=None, help="model calls a minute"
)
@settings_option
@click.option("--durability", type=click.Choice(["turn", "batch"]), default=None)
def eval_(dataset: str, factory: str, scorer_specs: tuple[str, ...], name: str | None,
          repeat: int, base: str | None, min_pass_rate: float | None, as_json: bool,
          store_url: str | None, concurrency: int, ray_address: str | None,
          workers: int | None, rpm: float | None, settings: dict[str, Any],
          durability: str | None) -> None:  # fmt: skip
    """Evaluate the agent on each case of DATASET.jsonl ({"id", "input", "expected"?} a line).

    Running the same command again resumes the eval: finished attempts are read from the run
    log, unfinished ones go on from it.
    """
    from steadyloop.cli.setup import store_path
    from steadyloop.evals import compare, evaluate, load_report

    importable_here()
    scorers = guard(lambda: [s for spec in scorer_specs for s in parse_scorer(spec)])
    engine = chosen_engine(concurrency, ray_address, {"workers": workers})
    store = store_url if store_url is not None else str(store_path())

    def run(factory: str, eval_name: str | None) -> Any:
        return evaluate(
            factory, dataset, scorers, name=eval_name or default_name(dataset, factory),
            store=store, engine=engine, repeat=repeat,
            rate_limit=f"{rpm}/min" if rpm is not None else None,
            durability=cast(Literal["turn", "batch"] | None, durability), settings=settings,
        )  # fmt: skip

    try:
        other = None
        if base is not None and ":" not in base:
            other = guard(lambda: load_report(base, store=store))
        report = guard(lambda: run(factory, name))
        if base is not None and ":" in base:
            other = guard(lambda: run(base, None))
    except KeyboardInterrupt:
        click.echo("interrupted: run the same command again to resume the eval", err=True)
        sys.exit(EXIT_INTERRUPTED)
    comparison = compare(other, report) if other is not None else None
    for bad in report.bad[:MAX_BAD_SHOWN]:
        click.echo(f"skipped {dataset} {bad}", err=True)
    if as_json:
        document = report.to_dict()
        if comparison is not None:
            document["compare"] = comparison.to_dict()
        click.echo(json.dumps(document, ensure_ascii=False))
    else:
        click.echo(report.render(), nl=False)
        if comparison is not None:
            click.echo(comparison.render(), nl=False)
    if report.unfinished:
        click.echo(
            f"{report.unfinished} attempts did not finish: run the same command again", err=True
        )
        sys.exit(EXIT_ERROR)
    if min_pass_rate is not None and report.pass_rate < min_pass_rate:
        click.echo(
            f"pass rate {report.pass_rate * 100:.1f}% is below the bar of "
            f"{min_pass_rate * 100:.1f}%",
            err=True,
        )
        sys.exit(EXIT_ERROR)


def default_name(dataset: str, factory: str) -> str:
    """`DATASET_STEM-FUNCTION` (`cases-make_agent`)."""
    return f"{Path(dataset).stem}-{factory.rpartition(':')[2].rpartition('.')[2]}"


def parse_scorer(spec: str) -> list[Any]:
    """The scorers a `--scorer` SPEC names; `ConfigError` for an unknown one."""
    from steadyloop import evals

    kind, colon, argument = spec.partition(":")
    made = _builtin(kind, argument if colon else None, spec)
    if made is not None:
        return [made]
    if not colon:
        raise ConfigError(
            f"unknown scorer {spec!r}: use a built-in (exact_match, contains, regex:PATTERN, "
            "json_equal, tool_called:TOOL, no_tool_errors, max_turns:N, max_cost:USD, "
            "max_latency:SECONDS, max_tokens:N) or MODULE:NAME"
        )
    from steadyloop.batch.worker import import_object

    found = import_object(spec, "scorer")
    items = list(found) if isinstance(found, list | tuple) else [found]
    for item in items:
        if not isinstance(item, evals.Scorer) and not callable(item):
            raise ConfigError(f"{spec} is not a scorer, a function or a list of them")
    return items


def _builtin(kind: str, argument: str | None, spec: str) -> Any:
    """The built-in scorer `kind` with its argument, or None when `kind` names none."""
    from steadyloop import evals

    def need() -> str:
        if not argument:
            raise ConfigError(f"the scorer {kind} needs a value: {kind}:VALUE")
        return argument

    def number(kind_of: type[int] | type[float]) -> Any:
        try:
            return kind_of(need())
        except ValueError:
            raise ConfigError(f"the scorer {spec} needs a number after the ':'") from None

    simple = {"exact_match": evals.ExactMatch, "json_equal": evals.JSONEqual,
              "no_tool_errors": evals.NoToolErrors}  # fmt: skip
    if kind in simple:
        return simple[kind]()
    if kind == "contains":
        return evals.Contains(argument or None)
    if kind == "regex":
        try:
            return evals.Regex(need())
        except re.error as exc:
            raise ConfigError(f"the scorer {spec} is not a regular expression: {exc}") from None
    if kind == "tool_called":
        return evals.ToolCalled(need())
    if kind == "max_turns":
        return evals.MaxTurns(number(int))
    if kind == "max_cost":
        return evals.MaxCost(number(float))
    if kind == "max_latency":
        return evals.MaxLatency(number(float))
    if kind == "max_tokens":
        return evals.MaxTokens(number(int))
    return None
