"""kill -9 at random points of logged runs that pause for approval, each resumed and approved
until it answers; prints what it found as JSON.

    python approval_kills.py FOLDER KILLS SEED

It goes on until KILLS rounds killed a logged run mid-way. Each round runs a two-turn agent
(every turn: a gated `charge` that is not idempotent, an idempotent `lookup` and an async
`note`, each taking a few milliseconds) with a run log and no approver, so every turn pauses.
The run is taken on step by step, each step in a forked child: the first step starts it, and
each later one resumes it, approving the waiting `charge` when it is paused. One random step
of the round is killed with SIGKILL: after a random delay, or (every other round) by the
approved `charge` itself the moment its effect is done; the others run to their end. Then:

- no `charge` call took effect twice (each effect appends the call id to `effects.log`);
- every tool result the log held right after the kill is in the final transcript unchanged;
- the final transcript is a valid history (every call answered) and the run answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from run_log.kill_sweep import in_child, logged
from steadyloop import Agent, Approve, AssistantMessage, Message, ToolCall, ToolResult, tool
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec
from steadyloop.transcript import calls_answered

TURNS = 2
# A round takes its run through at most this many steps (a start, then resumes).
STEPS = 12


def build_agent(folder: Path, store: Path, die_after_effect: bool = False) -> Agent:
    @tool(approve=True)
    def charge(call: str) -> str:
        """Charges once approved: not safe to repeat."""
        with (folder / "effects.log").open("a") as effects:
            effects.write(call + "\n")
        if die_after_effect:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(random.uniform(0, 0.004))
        return f"charged {call}"

    @tool(idempotent=True)
    def lookup(call: str) -> str:
        """Reads: safe to repeat."""
        time.sleep(random.uniform(0, 0.004))
        return f"looked up {call}"

    @tool
    async def note(call: str) -> str:
        """Writes a note."""
        await asyncio.sleep(random.uniform(0, 0.004))
        return f"noted {call}"

    def reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        turn = sum(isinstance(m, AssistantMessage) for m in messages)
        if turn == TURNS:
            return AssistantMessage("done")
        return AssistantMessage(
            tool_calls=tuple(
                ToolCall(f"{name}-{turn}", name, json.dumps({"call": f"{name}-{turn}"}))
                for name in ("charge", "lookup", "note")
            )
        )

    return Agent(FunctionModel(reply), tools=[charge, lookup, note], store=store)


def step(folder: Path, store_path: Path, die_after_effect: bool = False) -> None:
    """Takes the run one step on: starts it, or resumes it (approving the `charge` it waits
    on when it is paused), until it answers or pauses again."""
    agent = build_agent(folder, store_path, die_after_effect)
    store = agent.store
    assert store is not None
    runs = store.runs(limit=1)
    if not runs:
        agent.run_sync("go")
    elif runs[0].status != "answered":
        info = runs[0]
        decisions = None
        if info.stop_reason == "approval" and info.status in ("paused", "limit"):
            last = [m for m in store.messages(info.id) if isinstance(m, AssistantMessage)][-1]
            decisions = {c.id: Approve() for c in last.tool_calls if c.name == "charge"}
        asyncio.run(agent.resume(info.id, decisions=decisions))
    agent.close_store()


def one_round(
    folder: Path, rng: random.Random, span: float, number_of_round: int
) -> dict[str, object]:
    folder.mkdir()
    store_path = folder / "runs.db"
    RunStore(store_path).close()
    random.seed(rng.random())
    at_effect = number_of_round % 2 == 1
    # The start, or one of the resumes that approve (only those run a `charge`).
    doomed = rng.randrange(1, TURNS + 1) if at_effect else rng.randrange(TURNS + 1)
    killed = False
    held: dict[str, str] = {}
    failed_steps = 0
    for number in range(STEPS):
        before = logged(store_path)
        if before is not None and before[0].status == "answered":
            break
        die = at_effect and number == doomed
        pid = in_child(lambda: step(folder, store_path, die))  # noqa: B023 (runs at once)
        if number == doomed and not at_effect:
            time.sleep(rng.uniform(0, span))
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            killed = True
            after_kill = logged(store_path)
            held = after_kill[1] if after_kill is not None else {}
        elif os.WEXITSTATUS(status) != 0:
            failed_steps += 1
    final = logged(store_path)
    assert final is not None
    run, _, messages = final
    results = {m.call_id: m.content for m in messages if isinstance(m, ToolResult)}
    effects_log = folder / "effects.log"
    effects = Counter(effects_log.read_text().split() if effects_log.exists() else ())
    return {
        "killed": killed,
        "at_effect": at_effect,
        "status": run.status,
        "failed_steps": failed_steps,
        "valid": calls_answered(messages),
        "charged_twice": sum(count > 1 for count in effects.values()),
        "lost": sum(results.get(cid) != content for cid, content in held.items()),
        "interrupted": sum(c.startswith("interrupted") for c in results.values()),
        "held": len(held),
    }


def step_seconds(folder: Path) -> float:
    """How long a forked step takes, unkilled (the longest of a whole run's): the span kills
    are spread over. Runs here first once, so the children start warm, then waits for its
    threads to end before anything forks."""
    folder.mkdir()
    agent = build_agent(folder, folder / "warm.db")
    paused = agent.run_sync("go")
    asyncio.run(agent.resume(paused, decisions={paused.pending[0]: Approve()}))
    asyncio.run(agent.aclose())
    while threading.active_count() > 1:
        time.sleep(0.01)
    RunStore(folder / "runs.db").close()
    longest = 0.0
    for _ in range(TURNS + 1):
        started = time.perf_counter()
        os.waitpid(in_child(lambda: step(folder, folder / "runs.db")), 0)
        longest = max(longest, time.perf_counter() - started)
    return longest


def main(folder: Path, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    span = step_seconds(folder / "timing")
    rounds: list[dict[str, object]] = []
    while sum(bool(r["killed"]) for r in rounds) < kills and len(rounds) < 10 * kills:
        rounds.append(one_round(folder / f"round-{len(rounds)}", rng, span, len(rounds)))
    print(json.dumps(rounds))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
