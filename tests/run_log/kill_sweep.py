"""kill -9 at random points of logged runs, each resumed; prints what it found as JSON.

    python kill_sweep.py FOLDER KILLS SEED

It goes on until KILLS rounds killed a logged run mid-way. Each round forks a child that runs
a three-turn agent (every turn: a `charge` that is not idempotent, an idempotent `lookup` and
an async `note`, each taking a few milliseconds) with a run log, kills it with SIGKILL after a
random delay, forks another child that resumes the run, and then checks the log:

- no `charge` call took effect twice (each effect appends the call id to `effects.log`);
- every tool result the log held right after the kill is in the resumed transcript unchanged;
- the final transcript is a valid history (every call answered) and the run answered.

Forking from this one process (which imports steadyloop once and starts no threads) makes a
round cost milliseconds instead of an interpreter start.
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
from collections.abc import Callable, Sequence
from pathlib import Path

from steadyloop import Agent, AssistantMessage, Message, ToolCall, ToolResult, tool
from steadyloop.store import RunInfo, RunStore
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec
from steadyloop.transcript import calls_answered

TURNS = 3


def build_agent(folder: Path, store: Path) -> Agent:
    @tool
    def charge(call: str) -> str:
        """Charges: not safe to repeat."""
        time.sleep(random.uniform(0, 0.004))
        with (folder / "effects.log").open("a") as effects:
            effects.write(call + "\n")
        time.sleep(random.uniform(0, 0.002))
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


def in_child(work: Callable[[], object]) -> int:
    """Forks; the child runs `work()` and exits; returns the child's PID."""
    pid = os.fork()
    if pid == 0:
        try:
            work()
        except BaseException:
            os._exit(1)
        os._exit(0)
    return pid


def logged(store_path: Path) -> tuple[RunInfo, dict[str, str], tuple[Message, ...]] | None:
    """The run in the log, its finished tool results by call id, and its transcript."""
    if not store_path.exists():
        return None
    store = RunStore(store_path, read_only=True)
    try:
        runs = store.runs(limit=1)
        if not runs:
            return None
        records = store.tool_records(runs[0].id)
        results = {call_id: record.result.content for call_id, record in records.items()}
        return runs[0], results, store.messages(runs[0].id)
    finally:
        store.close()


def one_round(folder: Path, rng: random.Random, span: float) -> dict[str, object]:
    folder.mkdir()
    store_path = folder / "runs.db"
    RunStore(store_path).close()  # an existing log, as most runs have: the kills hit the run
    random.seed(rng.random())

    def first() -> None:
        build_agent(folder, store_path).run_sync("go")

    pid = in_child(first)
    time.sleep(rng.uniform(0.05 * span, 0.8 * span))
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    killed = os.WIFSIGNALED(status)
    before = logged(store_path)
    if before is None:
        return {"killed": killed, "before_start": True}
    _, held, _ = before

    def resume() -> None:
        agent = build_agent(folder, store_path)
        assert agent.store is not None
        run_id = agent.store.runs(limit=1)[0].id
        if agent.store.run(run_id).status != "answered":
            asyncio.run(agent.resume(run_id))
        agent.close_store()

    pid = in_child(resume)
    _, status = os.waitpid(pid, 0)
    after = logged(store_path)
    assert after is not None
    run, _, messages = after
    results = {m.call_id: m.content for m in messages if isinstance(m, ToolResult)}
    effects_log = folder / "effects.log"
    effects = Counter(effects_log.read_text().split() if effects_log.exists() else ())
    return {
        "killed": killed,
        "before_start": False,
        "resumed_ok": os.WEXITSTATUS(status) == 0,
        "status": run.status,
        "valid": calls_answered(messages),
        "charged_twice": sum(count > 1 for count in effects.values()),
        "lost": sum(results.get(cid) != content for cid, content in held.items()),
        "interrupted": sum(c.startswith("interrupted") for c in results.values()),
        "held": len(held),
    }


def warm_up(folder: Path) -> None:
    """One whole run here first, so the forked children start warm (imports, schemas, the
    first SQLite open); then its threads are gone again before anything forks."""
    folder.mkdir()
    agent = build_agent(folder, folder / "runs.db")
    agent.run_sync("go")
    asyncio.run(agent.aclose())
    while threading.active_count() > 1:
        time.sleep(0.01)


def _mid_run(outcome: dict[str, object]) -> bool:
    return bool(outcome["killed"]) and not outcome["before_start"]


def whole_run_seconds(folder: Path) -> float:
    """How long a forked child takes for a whole run, unkilled: the span kills are spread over."""
    folder.mkdir()
    RunStore(folder / "runs.db").close()
    started = time.perf_counter()
    os.waitpid(in_child(lambda: build_agent(folder, folder / "runs.db").run_sync("go")), 0)
    return time.perf_counter() - started


def main(folder: Path, kills: int, seed: int) -> None:
    rng = random.Random(seed)
    warm_up(folder / "warm-up")
    span = whole_run_seconds(folder / "timing")
    # Rounds go on until `kills` of them killed a run mid-way after it was logged (a kill can
    # also land before the first commit or after the run ended), ten times that at most.
    rounds: list[dict[str, object]] = []
    while sum(_mid_run(r) for r in rounds) < kills and len(rounds) < 10 * kills:
        rounds.append(one_round(folder / f"round-{len(rounds)}", rng, span))
    print(json.dumps(rounds))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
