"""What a reasoning model's native content costs the loop: S1 with each reply carrying 2 KB of
the provider's own JSON (`AssistantMessage.native`, as a Responses reply with encrypted
reasoning holds it) against the same replies without it.

    uv run python bench/native_content.py [--quick]

S1's async configuration (20 turns x 3 adds, the model replying at once), in blocks of ten runs
alternating configuration by configuration, the first round a warm-up; in memory, and with the
SQLite run log on (where the native content is written with every reply). Prints a JSON object:
µs per turn for each configuration and the ratio with / without native content (median, min,
max over the rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "drivers"))

import common
from steadyloop_driver import SteadyloopRunner, per_turn_us

from steadyloop import Agent, AssistantMessage, Limits, ToolCall, tool
from steadyloop.messages import Native
from steadyloop.models.base import Model, ModelRequest

NATIVE_BYTES = 2048


def native_output(calls: list[common.Call]) -> list[dict[str, Any]]:
    """A Responses output array of ~2 KB: a reasoning item with encrypted content, then the
    calls."""
    reasoning = {"type": "reasoning", "id": "rs_0123456789", "summary": []}
    items: list[dict[str, Any]] = [reasoning]
    items += [
        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments_json}
        for c in calls
    ]
    room = NATIVE_BYTES - len(json.dumps(items)) - len(', "encrypted_content": ""')
    reasoning["encrypted_content"] = "g" * max(room, 0)
    return items


class NativeModel(Model):
    """S1's model, each reply carrying 2 KB of native content."""

    name = "bench-native"

    async def request(self, request: ModelRequest) -> AssistantMessage:
        calls = common.next_reply()
        if calls is None:
            return AssistantMessage(common.FINAL_TEXT, stop_reason="end_turn")
        native = Native("openai-responses", "https://api.openai.com/v1", "gpt-5",
                        native_output(calls))  # fmt: skip
        return AssistantMessage(
            tool_calls=tuple(ToolCall(c.id, c.name, c.arguments_json) for c in calls),
            stop_reason="tool_use",
            native=native,
            reasoning_text="Adding the numbers one pair at a time.",
        )


class NativeRunner(SteadyloopRunner):
    def __init__(self, plan: common.Plan, **options: Any) -> None:
        self.agent = Agent(
            NativeModel(),
            tools=[tool(plan.function)],
            limits=Limits(max_turns=plan.turns + 1, max_context_tokens=10_000_000),
            **options,
        )


async def rounds(quick: bool, folder: Path) -> dict[str, Any]:
    plan = common.Plan(turns=20, calls=3, is_async=True)
    block = 2 if quick else 10
    reps = 3 if quick else 30
    runners: dict[str, SteadyloopRunner] = {
        "plain": SteadyloopRunner(plan),
        "native": NativeRunner(plan),
        "plain_logged": SteadyloopRunner(plan, store=folder / "plain.db"),
        "native_logged": NativeRunner(plan, store=folder / "native.db"),
    }
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for number in range(reps + 1):
        for name, runner in runners.items():
            elapsed = await per_turn_us(runner, plan, block, "native content", lambda: None)
            if number > 0:  # the first round warms up
                samples[name].append(elapsed)
    for runner in runners.values():
        await runner.agent.aclose()
    figures: dict[str, Any] = {name: common.spread(values) for name, values in samples.items()}
    for base in ("plain", "plain_logged"):
        other = base.replace("plain", "native")
        ratios = [b / a for a, b in zip(samples[base], samples[other], strict=True)]
        figures[f"ratio_{other}"] = common.spread(ratios)
    for values in figures.values():
        values.pop("values")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds, for a smoke test")
    quick = parser.parse_args().quick
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(asyncio.run(rounds(quick, Path(folder))), indent=2))


if __name__ == "__main__":
    main()
