"""`steadyloop batch`: run an agent over a file of tasks, in this process or on Ray."""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import click

from steadyloop.agent import Agent
from steadyloop.cli.common import EXIT_INTERRUPTED, guard
from steadyloop.cli.options import settings_option, store_option
from steadyloop.store import RunInfo, RunLog

if TYPE_CHECKING:
    from steadyloop.batch.runner import Engine

__all__ = ["agent_from_factory", "batch", "chosen_engine", "importable_here", "render_batch"]

EXIT_UNFINISHED = 1
MAX_BAD_SHOWN = 20


@click.command()
@click.argument("tasks_file", metavar="TASKS.jsonl", type=click.Path(dir_okay=False))
@click.option(
    "--agent",
    "factory",
    required=True,
    metavar="MODULE:FUNCTION",
    help="a function that returns the Agent (called once per worker; the current directory "
    "is importable)",
)
@click.option(
    "--out",
    required=True,
    metavar="RESULTS.jsonl",
    type=click.Path(dir_okay=False),
    help="the results file: one JSON line per task; tasks it has are skipped",
)
@click.option(
    "--batch", "name", default=None, help="the batch's name; runs are NAME:ID (default: --out stem)"
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="runs at a time (per worker with --ray)",
)
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS",
    help="run on Ray: HOST:PORT of a cluster, 'auto' for the one on this machine, or 'local' "
    "to start one for this batch",
)
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="Ray workers (default: one per CPU)"
)
@click.option(
    "--chunk", type=click.IntRange(min=1), default=None, help="tasks per Ray call (default: 50)"
)
@store_option
@click.option(
    "--rpm",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="at most this many model calls a minute, for the whole batch",
)
@settings_option
@click.option(
    "--durability",
    type=click.Choice(["turn", "batch"]),
    default=None,
    help="when runs commit to the log (default: the agent's own, 'turn')",
)
def batch(tasks_file: str, factory: str, out: str, name: str | None, concurrency: int,
          ray_address: str | None, workers: int | None, chunk: int | None, store_url: str | None,
          rpm: float | None, settings: dict[str, Any], durability: str | None,
          ) -> None:  # fmt: skip
    """Run the agent on each task of TASKS.jsonl ({"id", "prompt", ...} per line).

    Running the same command again resumes the batch: tasks already in --out are skipped and
    unfinished runs go on from the run log.
    """
    from steadyloop.batch import run_batch
    from steadyloop.cli.setup import store_path

    importable_here()
    engine = chosen_engine(concurrency, ray_address, {"workers": workers, "chunk": chunk})
    try:
        report = guard(
            lambda: run_batch(
                factory,
                tasks_file,
                out=out,
                store=store_url if store_url is not None else str(store_path()),
                batch=name,
                engine=engine,
                rate_limit=f"{rpm}/min" if rpm is not None else None,
                durability=cast(Literal["turn", "batch"] | None, durability),
                settings=settings,
            )
        )
    except KeyboardInterrupt:
        click.echo("interrupted: run the same command again to resume the batch", err=True)
        sys.exit(EXIT_INTERRUPTED)
    for bad in report.bad[:MAX_BAD_SHOWN]:
        click.echo(f"skipped {tasks_file} {bad}", err=True)
    if len(report.bad) > MAX_BAD_SHOWN:
        click.echo(f"... and {len(report.bad) - MAX_BAD_SHOWN} more bad lines", err=True)
    click.echo(report.summary())
    if report.unfinished:
        sys.exit(EXIT_UNFINISHED)


def chosen_engine(
    concurrency: int, ray_address: str | None, ray_options: Mapping[str, int | None]
) -> Engine:
    """The engine the command line chooses: Ray at `--ray ADDRESS` ('local': one started for
    this command) with `concurrency` runs per worker and the Ray options given (`workers`,
    `chunk`: None when not given), else this process with `concurrency` runs at a time. A Ray
    option without `--ray` is a usage error."""
    from steadyloop.batch import LocalEngine

    given = {name: value for name, value in ray_options.items() if value is not None}
    if ray_address is None:
        if given:
            names = " and ".join(f"--{name}" for name in ray_options)
            verb = "go" if len(ray_options) > 1 else "goes"
            raise click.UsageError(f"{names} {verb} with --ray")
        return LocalEngine(concurrency)
    from steadyloop.batch.ray import RayEngine

    address = None if ray_address == "local" else ray_address
    return guard(lambda: RayEngine(address=address, per_worker=concurrency, **given))


def importable_here() -> None:
    """Lets a `module:function` factory be imported from the current directory."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def agent_from_factory(factory: str, store: RunLog, *, model: str | None = None) -> Agent[Any]:
    """The agent `module:function` makes (as a batch's worker builds it), logging to `store`;
    `model` replaces its model."""
    from steadyloop.batch.worker import build_agent
    from steadyloop.models import resolve_model

    importable_here()
    agent = build_agent(factory)
    agent.store = store
    if model is not None:
        agent.model = resolve_model(model)
    return agent


def render_batch(name: str, runs: Sequence[RunInfo]) -> str:
    """The runs of batch `name` counted by status (as the log has it)."""
    if not runs:
        return f"no runs of batch {name} logged"
    counts = Counter(run.status for run in runs)
    lines = [f"batch {name}: {len(runs)} runs"]
    lines += [f"  {status:<12} {count:>8,}" for status, count in counts.most_common()]
    return "\n".join(lines)
