"""One worker of a batch: an agent built from the batch's factory, turning tasks into result rows.

Agents never travel: each worker (the batch's own process, or each Ray actor) imports the
`"module:function"` factory and calls it once, then runs every task it is given on that agent.
With a run log, task `t` of batch `b` runs as run `"b:t"` with `if_exists="resume"`: a run the log
has finished returns its logged result without a model call, an unfinished one goes on from
where the log stops, and one paused for approval gets its paused row again. (When the log has no
run of the batch yet, that look-up is skipped.) A `"module:function"` factory is logged with each
run's settings (`agent_factory`), so `steadyloop resume RUN` rebuilds the agent with its tools.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from steadyloop.agent import Agent
from steadyloop.batch.ratelimit import Rate, RateLimited
from steadyloop.batch.results import Row, error_row, paused_row, result_row
from steadyloop.batch.tasks import Task
from steadyloop.effects import nest
from steadyloop.errors import ConfigError, LimitExceeded
from steadyloop.resume import waiting_calls
from steadyloop.store import RunLog

__all__ = ["Job", "Worker", "factory_spec", "import_object"]

Factory = str | Callable[[], Agent]


@dataclass(frozen=True, slots=True)
class Job:
    """What every worker of a batch needs, and nothing it could not rebuild elsewhere.

    `store` is a path or URL (each worker opens its own), an open log (one process only), or
    None (the agent's own log, if it has one); `durability` None keeps the agent's own; `rate`
    caps the model calls of all workers together; `settings` are added to the model's request
    settings (`--set` of `steadyloop batch`).
    """

    factory: Factory
    batch: str
    store: RunLog | str | None = None
    durability: Literal["turn", "batch"] | None = None
    rate: Rate | None = None
    settings: Mapping[str, Any] | None = None


class Worker:
    """An agent and the batch it works for.

    `fresh`: the log had no run of the batch when the worker started, so its runs are started
    without first looking each one up (a task is only ever on one worker at a time).
    """

    def __init__(self, agent: Agent, batch: str, *, fresh: bool = False) -> None:
        self.agent = agent
        self.batch = batch
        self.fresh = fresh

    @classmethod
    def build(
        cls,
        job: Job,
        store: RunLog | None = None,
        acquire: Callable[[], Awaitable[None]] | None = None,
    ) -> Worker:
        """Calls the factory once; `store` replaces the agent's log, `acquire` waits for a
        token before each model call. A factory that fails is a `ConfigError` naming it."""
        agent = build_agent(job.factory)
        spec = factory_spec(job.factory)
        if spec is not None:  # logged with each run: `steadyloop resume` rebuilds the agent
            agent.metadata["agent_factory"] = spec
        if store is not None:
            agent.store = store
        if job.durability is not None:
            agent.durability = job.durability
        if job.settings:
            add_settings(agent, job.settings)
        if acquire is not None:
            agent.effects = nest([RateLimited(acquire), *filter(None, [agent.effects])])
        log = agent.store
        fresh = log is not None and not log.runs_with_prefix(f"{job.batch}:", limit=1)
        return cls(agent, job.batch, fresh=fresh)

    async def run(self, task: Task) -> Row:
        """Runs `task` (or reads its logged result) and returns its row; never raises for a
        failed run, only for cancellation."""
        run_id = f"{self.batch}:{task.id}"
        try:
            options = _run_options(task)
            if self.agent.store is None:
                result = await self.agent.run(task.prompt, **options)
            else:
                result = await self.agent.run(
                    task.prompt,
                    run_id=run_id,
                    if_exists="error" if self.fresh else "resume",
                    **options,
                )
        except LimitExceeded as exc:
            return result_row(task.id, run_id, exc.result)
        except ConfigError as exc:
            # A run the log holds paused (its row was lost to a kill) waits for its decisions.
            paused = await asyncio.to_thread(self._paused_row, task.id, run_id)
            return paused if paused is not None else error_row(task.id, run_id, exc)
        except Exception as exc:
            return error_row(task.id, run_id, exc)
        return result_row(task.id, run_id, result)

    def _paused_row(self, task_id: str, run_id: str) -> Row | None:
        """The row of run `run_id` if the log has it paused for approval, else None."""
        store = self.agent.store
        info = store.find(run_id) if store is not None else None
        if store is None or info is None:
            return None
        waiting = waiting_calls(store, run_id)
        return paused_row(task_id, info, waiting) if waiting else None

    async def aclose(self) -> None:
        await self.agent.aclose()


def build_agent(factory: Factory) -> Agent:
    """The agent `factory` (a callable, or `"module:function"`) makes."""
    name = factory if isinstance(factory, str) else getattr(factory, "__qualname__", "factory")
    make = import_object(factory, "agent factory") if isinstance(factory, str) else factory
    try:
        agent = make()
    except Exception as exc:
        raise ConfigError(
            f"the agent factory {name} failed: {type(exc).__name__}: {exc}; no task was run"
        ) from exc
    if not isinstance(agent, Agent):
        raise ConfigError(f"the agent factory {name} returned {type(agent).__name__}, not an Agent")
    return agent


def factory_spec(factory: Factory) -> str | None:
    """`"module:function"` that imports `factory` again, or None when nothing would (a lambda,
    a local function, one defined in a script run as `__main__`)."""
    if isinstance(factory, str):
        return factory
    module = getattr(factory, "__module__", None)
    name = getattr(factory, "__qualname__", "")
    if not module or module == "__main__" or module not in sys.modules or "<" in name:
        return None
    target: Any = sys.modules[module]
    for part in name.split("."):
        target = getattr(target, part, None)
    return f"{module}:{name}" if target is factory else None


def add_settings(agent: Agent, settings: Mapping[str, Any]) -> None:
    """Adds request settings to the agent's model (those given win); a model that takes no
    settings (the fakes) is a `ConfigError`."""
    current = getattr(agent.model, "settings", None)
    if not isinstance(current, dict):
        raise ConfigError(
            f"the model {agent.model.name} takes no request settings: drop --set, or use a "
            "provider's model (openai:..., anthropic:..., ollama:...)"
        )
    current.update(settings)


def import_object(spec: str, what: str) -> Any:
    """The object `"package.module:name"` names (a `ConfigError` saying why when it cannot)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"the {what} is given as 'module:name', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(
            f"cannot import the {what} {spec}: {type(exc).__name__}: {exc} (the module must be "
            "importable where the batch runs: installed, or in the current directory)"
        ) from exc
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(
                f"the {what} {spec} does not exist: {module_name} has no {attribute}"
            ) from None
    return target


def _run_options(task: Task) -> dict[str, Any]:
    """The task's `Agent.run` options: its `deps` as given, its `output` type imported."""
    options = dict(task.options)
    output = options.get("output")
    if isinstance(output, str):
        options["output"] = import_object(output, "output type")
    return options
