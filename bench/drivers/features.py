"""S14 (steadyloop only): this round's features, each unused and used, measured in one process.

Per turn, S1's async run (20 turns x 3 adds, the model replying at once) in blocks of ten runs,
every configuration below in turn, round after round (the first round a warm-up), so each ratio
divides two figures taken side by side:

Unused (the feature there but idle; target about 1.0x):
- `same_ratio`: S1's plain agent / another agent just like it: the noise of the measurement
  itself, what "about 1.0x" can mean on the machine at the time (shown, not judged).
- `subagent_idle_ratio`: an agent whose tools also hold a sub-agent (`Agent.as_tool`) the model
  never calls / the same agent with a plain tool of the same name in its place (as many tools
  offered: what is judged is the sub-agent's machinery, not one more tool's description).
- `fallback_idle_ratio`: a `Fallback(first, spare)` whose first model answers every call / the
  first model alone.
- `mcp_idle_ratio`: an agent with a connected stdio MCP server (server-everything, its tools
  offered on every request, none called) / the agent offering the same tool specs as plain
  tools (the toolset's machinery judged, not the 15 descriptions); n/a without Node.js or the
  MCP SDK.
- `session_idle_ratio`: runs without `session=` on a run log that holds a session of ten runs /
  the same runs on a log that holds the same ten runs' messages outside any session (each run
  given the one before's transcript as `history=`); both logs flushed per block.
- `idle_modules_loaded`: the modules of evals, the Gemini adapter, sub-agents and MCP that a
  plain S1 run loads, in a fresh interpreter (target 0: what is not loaded costs nothing). Per-tool
  limits unused are S1 itself: with no `max_calls` and no `max_tool_calls` a run has no budget.

Used (the feature doing its job / the closest thing without it):
- `subagent_ratio`: 3 calls a turn to a sub-agent (a child agent answering at once) / 3 calls a
  turn to a plain tool that runs the same child agent by hand (`await child.run(prompt)`);
  `subagent_direct_ratio`: the same / a plain tool returning the child's answer itself.
- `limits_ratio`: `@tool(max_calls=...)` and `Limits(max_tool_calls=...)` set, never reached,
  every call counted / no limits.
- `fallback_ratio`: `Fallback(down, up)` whose first model fails every call (a retryable 503,
  `model_retries=0`) / a model that catches the same error and asks the second itself.
- `session_ratio`: runs in pairs on one logged agent, the second continuing the first through
  `session=` / the second given the first's transcript as `history=` (same log, flushed).
- `google_ratio`: the Gemini adapter per turn / the OpenAI Chat Completions adapter per turn,
  each through its SDK with an in-process HTTP transport answering S1's script in the provider's
  recorded JSON (target 1.2x).

Besides, not per turn:
- `session_growth_*`: sessions of 100 runs with compaction on (`session_growth`, also
  bench/sessions.py): steadyloop's own time of runs 91-100 / runs 11-20 (target 1.2x: a run's
  cost flat in the session's length once the context has filled), and of run 100 / run 1 beside
  the tokens each sent (shown: run 1 has no history, so it judges the context, not the session).
- `eval_ratio`: CPU per case of `evaluate` over 1,000 cases (a 10-50 ms fake model, 3 model and
  3 tool calls each, a SQLite log, four scorers) / `run_batch` of the same cases, the two in
  turn, each in a fresh log (target 1.2x; also bench/evals.py, in fresh processes).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import common
from eval_batch import evals_against_batch
from provider_replies import gemini_model, openai_model
from session_growth import session_growth
from steadyloop_driver import BenchModel, everything_command, per_turn_us

from steadyloop import (
    Agent,
    AssistantMessage,
    Limits,
    Message,
    tool,
)
from steadyloop.errors import ModelError
from steadyloop.fallback import Fallback
from steadyloop.models.base import Model, ModelRequest
from steadyloop.tools import Tool, Toolset

if TYPE_CHECKING:
    pass

# The ratios, each (the figure's name, the configuration, what it is divided by). The two of a
# pair are timed one right after the other, in alternating order, so a busy moment of the
# machine hits both alike; a configuration in several pairs is timed once for each.
PAIRS = (
    ("subagent_idle", "subagent_idle", "plain_idle"),
    ("same", "none_again", "none"),
    ("fallback_idle", "fallback_idle", "none"),
    ("mcp_idle", "mcp_idle", "mcp_specs_plain"),
    ("session_idle", "session_idle", "session_idle_base"),
    ("subagent", "subagent", "child_by_hand"),
    ("subagent_direct", "subagent", "child_direct"),
    ("limits", "limits", "none"),
    ("fallback", "fallback", "fallback_by_hand"),
    ("session", "session", "history_by_hand"),
    ("google", "google", "openai"),
)
CHILD_ANSWER = "the helper's answer"
IDLE_MODULES = (
    "steadyloop.evals",
    "steadyloop.models.google",
    "steadyloop.models.google_wire",
    "steadyloop.subagents",
    "steadyloop.mcp",
)


# -- the per-turn configurations ---------------------------------------------------------------


@dataclass(frozen=True)
class AskPlan(common.Plan):
    """S1's plan with the calls going to `ask(prompt)`: a sub-agent, or a tool standing in."""

    tool: str = "ask"

    def arguments(self, turn: int, index: int) -> dict[str, Any]:
        return {"prompt": f"part {turn}.{index}"}


class Runner:
    """S1's run by `agent`, with `options` for `agent.run`."""

    def __init__(self, agent: Agent[Any], **options: Any) -> None:
        self.agent = agent
        self.options = options

    async def run(self) -> str:
        return str((await self.agent.run(common.PROMPT, **self.options)).output)


class SessionPairs:
    """Runs in pairs on one logged agent: the first starts a conversation, the second continues
    it, through `session=`, or `by_hand` with the first run's transcript as `history=`."""

    def __init__(self, agent: Agent[Any], by_hand: bool) -> None:
        self.agent = agent
        self.by_hand = by_hand
        self.count = 0
        self.previous: tuple[Message, ...] = ()

    async def run(self) -> str:
        pair, second = divmod(self.count, 2)
        self.count += 1
        if self.by_hand:
            result = await self.agent.run(common.PROMPT, history=self.previous if second else ())
            self.previous = result.messages
        else:
            result = await self.agent.run(common.PROMPT, session=f"conversation-{pair}")
        return str(result.output)


class ChildModel(Model):
    """The sub-agent's model: answers at once (it leaves S1's script to the parent)."""

    name = "child"

    async def request(self, request: ModelRequest) -> AssistantMessage:
        return AssistantMessage(CHILD_ANSWER, stop_reason="end_turn")


class SpareModel(BenchModel):
    """A `Fallback`'s second model: S1's script under another name."""

    name = "spare"


class DownModel(Model):
    """A model whose provider is down: every call fails with a retryable 503."""

    name = "down"

    async def request(self, request: ModelRequest) -> AssistantMessage:
        raise ModelError("503 service unavailable", retryable=True, status=503, provider="down")


class FallbackByHand(Model):
    """What an application without `Fallback` writes: try the first model, on its error ask
    the second."""

    name = "by-hand"

    def __init__(self, first: Model, second: Model) -> None:
        self.first, self.second = first, second

    async def request(self, request: ModelRequest) -> AssistantMessage:
        try:
            return await self.first.request(request)
        except ModelError:
            return await self.second.request(request)


def s1_agent(
    plan: common.Plan,
    model: Model | None = None,
    tools: Sequence[Tool | Toolset] = (),
    max_tool_calls: int | None = None,
    **options: Any,
) -> Agent[Any]:
    """S1's agent: add (unless `tools` replace it), the run's limits, and `options`."""
    return Agent(
        model if model is not None else BenchModel(),
        tools=list(tools) or [tool(plan.function)],
        limits=Limits(
            max_turns=plan.turns + 1,
            max_context_tokens=10_000_000,
            max_tool_calls=max_tool_calls,
        ),
        **options,
    )


def ask_tools(child: Agent[Any]) -> dict[str, Tool]:
    """`ask` three ways: the sub-agent, a tool running the child by hand, a tool answering as
    the child would without running it."""

    async def by_hand(prompt: str) -> str:
        """Asks a helper agent.

        Args:
            prompt: what to ask.
        """
        return str((await child.run(prompt)).output)

    async def direct(prompt: str) -> str:
        """Asks a helper agent.

        Args:
            prompt: what to ask.
        """
        return CHILD_ANSWER

    description = "Asks a helper agent."
    return {
        "subagent": child.as_tool(name="ask", description=description),
        "child_by_hand": tool(name="ask")(by_hand),
        "child_direct": tool(name="ask")(direct),
    }


@dataclass
class Timed:
    """One configuration: its runner, the plan its runs follow, what ends each block's timing."""

    runner: Runner | SessionPairs
    plan: common.Plan
    settle: Callable[[], object] = lambda: None


def flush_of(agent: Agent[Any]) -> Callable[[], object]:
    """Waits for `agent`'s run log to have written everything (so a block pays for its log)."""
    return getattr(agent.store, "flush", lambda: None)


async def seed(agent: Agent[Any], plan: common.Plan, runs: int, session: str | None) -> None:
    """`runs` untimed runs of `plan`, one conversation: each continues the one before, through
    `session` or, without one, given the one before's transcript as `history=` (so the two
    logs hold the same messages, the one in a session, the other not)."""
    history: tuple[Message, ...] = ()
    for _ in range(runs):
        common.CURRENT.set(common.RunState(plan))
        if session is not None:
            await agent.run(common.PROMPT, session=session)
        else:
            history = (await agent.run(common.PROMPT, history=history)).messages
    flush_of(agent)()


async def configurations(
    plan: common.Plan, folder: Path, mcp: list[str] | None
) -> dict[str, Timed]:
    """Every per-turn configuration of S14, by name (the logs seeded, the MCP server started)."""
    ask = AskPlan(turns=plan.turns, calls=plan.calls)
    asks = ask_tools(Agent(ChildModel()))
    session_log = s1_agent(plan, store=folder / "sessions.sqlite3")
    holding = s1_agent(plan, store=folder / "holding-a-session.sqlite3")
    plain_log = s1_agent(plan, store=folder / "without-sessions.sqlite3")
    await seed(holding, plan, 10, "seeded")
    await seed(plain_log, plan, 10, None)
    add, counted = tool(plan.function), tool(max_calls=10_000)(plan.function)
    timed = {
        "none": Timed(Runner(s1_agent(plan)), plan),
        "none_again": Timed(Runner(s1_agent(plan)), plan),
        "subagent_idle": Timed(Runner(s1_agent(plan, tools=[add, asks["subagent"]])), plan),
        "plain_idle": Timed(Runner(s1_agent(plan, tools=[add, asks["child_direct"]])), plan),
        **{name: Timed(Runner(s1_agent(ask, tools=[t])), ask) for name, t in asks.items()},
        "limits": Timed(Runner(s1_agent(plan, tools=[counted], max_tool_calls=10_000)), plan),
        "fallback_idle": Timed(Runner(s1_agent(plan, Fallback(BenchModel(), SpareModel()))), plan),
        "fallback": Timed(
            Runner(s1_agent(plan, Fallback(DownModel(), BenchModel()), model_retries=0)), plan
        ),
        "fallback_by_hand": Timed(
            Runner(s1_agent(plan, FallbackByHand(DownModel(), BenchModel()), model_retries=0)),
            plan,
        ),
        "session_idle": Timed(Runner(holding), plan, flush_of(holding)),
        "session_idle_base": Timed(Runner(plain_log), plan, flush_of(plain_log)),
        "session": Timed(SessionPairs(session_log, by_hand=False), plan, flush_of(session_log)),
        "history_by_hand": Timed(
            SessionPairs(session_log, by_hand=True), plan, flush_of(session_log)
        ),
        "openai": Timed(Runner(s1_agent(plan, openai_model())), plan),
        "google": Timed(Runner(s1_agent(plan, gemini_model())), plan),
    }
    if mcp is not None:
        from steadyloop.mcp import MCPServer

        server = MCPServer.stdio(mcp[0], *mcp[1:])
        timed["mcp_idle"] = Timed(Runner(s1_agent(plan, tools=[add, server])), plan)
        offered = [Tool(each.spec) for each in await server.tools()]  # the same specs, plain
        timed["mcp_specs_plain"] = Timed(Runner(s1_agent(plan, tools=[add, *offered])), plan)
    return timed


async def interleaved(
    timed: dict[str, Timed],
    pairs: Sequence[tuple[str, str, str]],
    block: int,
    reps: int,
    budget: float,
    scenario: str,
) -> dict[str, tuple[list[float], list[float]]]:
    """µs per turn of the two configurations of each pair, a block of `block` runs each, one
    right after the other (which goes first alternates by round), pair after pair, for `reps`
    rounds or until `budget` seconds (at least three); the first round warms up."""
    samples: dict[str, tuple[list[float], list[float]]] = {p[0]: ([], []) for p in pairs}
    started = time.perf_counter()
    for number in range(reps + 1):
        for name, *configurations in pairs:
            times = {}
            for configuration in configurations[:: 1 if number % 2 else -1]:
                one = timed[configuration]
                times[configuration] = await per_turn_us(
                    one.runner, one.plan, block, scenario, one.settle
                )
            if number > 0:
                for values, configuration in zip(samples[name], configurations, strict=True):
                    values.append(times[configuration])
        if number >= 3 and time.perf_counter() - started > budget:
            break
    return samples


async def close(timed: dict[str, Timed]) -> None:
    """Closes each configuration's agent once (its log, its MCP server, its HTTP client)."""
    for agent in {id(one.runner.agent): one.runner.agent for one in timed.values()}.values():
        await agent.aclose()


def ratio(over: list[float], under: list[float]) -> dict[str, Any]:
    """Round by round, `over`'s figure divided by `under`'s."""
    return common.spread([a / b for a, b in zip(over, under, strict=True)])


async def per_turn(settings: common.Settings, folder: Path) -> dict[str, Any]:
    """S14's per-turn figures: each configuration's µs per turn and the ratios."""
    plan = common.Plan(turns=20, calls=3, is_async=True)
    server = everything_command()
    mcp = server if isinstance(server, list) and _has_mcp() else None
    timed = await configurations(plan, folder, mcp)
    block = 2 if settings.quick else 10
    pairs = [p for p in PAIRS if p[1] in timed]
    try:
        samples = await interleaved(timed, pairs, block, settings.reps, settings.budget * 12, "S14")
    finally:
        await close(timed)
    figures: dict[str, Any] = {}
    for name, over, under in pairs:
        for configuration, values in zip((over, under), samples[name], strict=True):
            figures.setdefault(f"per_turn_us_{configuration}", common.spread(values))
        figures[f"{name}_ratio"] = ratio(*samples[name])
    if mcp is None:
        figures["mcp_idle_ratio"] = {"na": "n/a (needs Node.js, npm and the mcp package)"}
    return figures


def _has_mcp() -> bool:
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def idle_modules() -> list[str]:
    """The modules of IDLE_MODULES a plain S1 run loads, in a fresh interpreter."""
    code = (
        "import asyncio, json, sys\n"
        "import common, steadyloop_driver\n"
        "plan = common.Plan(turns=3, calls=1)\n"
        "common.CURRENT.set(common.RunState(plan))\n"
        "assert asyncio.run(steadyloop_driver.SteadyloopRunner(plan).run()) == common.FINAL_TEXT\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({IDLE_MODULES!r}))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parent,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


async def adapter_rounds(settings: common.Settings) -> tuple[list[float], list[float]]:
    """µs per turn of S1 through the Gemini and the OpenAI Chat adapters, alternating."""
    plan = common.Plan(turns=20, calls=3, is_async=True)
    timed = {
        "openai": Timed(Runner(s1_agent(plan, openai_model())), plan),
        "google": Timed(Runner(s1_agent(plan, gemini_model())), plan),
    }
    block = 2 if settings.quick else 10
    try:
        samples = await interleaved(
            timed, [("google", "google", "openai")], block, settings.reps, settings.budget * 5,
            "adapters",
        )  # fmt: skip
        return samples["google"]
    finally:
        await close(timed)


# -- the scenario ------------------------------------------------------------------------------


def s14(driver: common.Driver, settings: common.Settings) -> dict[str, Any]:
    """This round's features, each unused and used (the module's docstring tells each figure)."""
    loaded = idle_modules()
    with tempfile.TemporaryDirectory() as folder:
        figures = asyncio.run(per_turn(settings, Path(folder)))
        growth = asyncio.run(
            session_growth(
                20 if settings.quick else 100,
                2 if settings.quick else 20,
                True,
                str(Path(folder) / "growth.sqlite3"),
            )
        )
        evals = evals_against_batch(settings, Path(folder))
    figures["idle_modules_loaded"] = common.spread([len(loaded)])
    figures["idle_modules"] = loaded
    figures["session_growth_own_ratio"] = common.spread([growth["own_time_ratio_last_over_first"]])
    figures["session_growth_flat_ratio"] = common.spread(
        [growth["own_time_ratio_last10_over_runs_11_20"]]
    )
    figures["session_growth_tokens_ratio"] = common.spread([growth["tokens_ratio_last_over_first"]])
    figures["session_growth_run_1_ms"] = common.spread([growth["run_1"]["own_seconds"] * 1000])
    figures["session_growth_run_n_ms"] = common.spread(
        [growth[f"run_{growth['runs']}"]["own_seconds"] * 1000]
    )
    own_ms = growth["per_run_own_ms"]
    figures["session_growth_filled_ms"] = common.spread([statistics.fmean(own_ms[10:20])])
    figures["session_growth_late_ms"] = common.spread([statistics.fmean(own_ms[-10:])])
    figures["eval_cpu_ms_batch"] = common.spread(evals["batch"])
    figures["eval_cpu_ms_eval"] = common.spread(evals["eval"])
    figures["eval_ratio"] = ratio(evals["eval"], evals["batch"])
    return figures
