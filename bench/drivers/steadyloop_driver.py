"""steadyloop, driven by a minimal `Model` subclass that replies instantly from the script.

S6 (steadyloop only) runs S1's async configuration with the SQLite run log on and off; it
reports "n/a" until this checkout has a run log (`steadyloop.store`, `Agent(store=...)`).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import platform
import tempfile
from pathlib import Path
from typing import Any

import common

from steadyloop import Agent, AssistantMessage, Limits, ToolCall, tool
from steadyloop.models.base import Model, ModelRequest


class BenchModel(Model):
    """Replies with the calls `common.next_reply()` asks for; no other work."""

    name = "bench"

    async def request(self, request: ModelRequest) -> AssistantMessage:
        if wait := common.latency():
            await asyncio.sleep(wait)
        calls = common.next_reply()
        if calls is None:
            return AssistantMessage(common.FINAL_TEXT, stop_reason="end_turn")
        return AssistantMessage(
            tool_calls=tuple(ToolCall(c.id, c.name, c.arguments_json) for c in calls),
            stop_reason="tool_use",
        )


class SteadyloopRunner:
    def __init__(self, plan: common.Plan, **options: Any) -> None:
        self.agent = Agent(
            BenchModel(),
            tools=[tool(plan.function)],
            limits=Limits(max_turns=plan.turns + 1, max_context_tokens=10_000_000),
            **options,
        )

    async def run(self) -> str:
        result = await self.agent.run(common.PROMPT)
        return result.output


class SteadyloopDriver:
    name = "steadyloop"

    def versions(self) -> dict[str, str]:
        return {
            "steadyloop": importlib.metadata.version("steadyloop"),
            "pydantic": importlib.metadata.version("pydantic"),
            "python": platform.python_version(),
        }

    def supports(self, plan: common.Plan) -> str | None:
        return None

    def make(self, plan: common.Plan) -> SteadyloopRunner:
        return SteadyloopRunner(plan)


def s6(driver: common.Driver, settings: common.Settings) -> dict[str, Any]:
    """S1 (20 turns x 3 async adds) with the SQLite run log on, against off."""
    if importlib.util.find_spec("steadyloop.store") is None:
        return {"na": "n/a (no run log)"}
    plan = common.Plan(turns=20, calls=3, is_async=True)
    with tempfile.TemporaryDirectory() as folder:
        try:
            logged = SteadyloopRunner(plan, store=Path(folder) / "runs.sqlite3")
        except TypeError as exc:
            return {"na": f"n/a (Agent does not take store=: {exc})"}
        off, on = common.timed_runs(
            [(SteadyloopRunner(plan), plan), (logged, plan)], settings.reps, settings.budget
        )
    ratios = [b / a for (a, _), (b, _) in zip(off, on, strict=True)]
    return {
        "per_turn_us_off": common.spread([ns / 1000 / plan.turns for ns, _ in off]),
        "per_turn_us_on": common.spread([ns / 1000 / plan.turns for ns, _ in on]),
        "ratio": common.spread(ratios),
    }


if __name__ == "__main__":
    common.main(SteadyloopDriver(), {"S6": s6})
