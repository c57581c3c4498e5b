"""Evals against batches: the same 1,000 runs (a fake model taking 10-50 ms a reply, 3 model
calls and 3 tool calls each, a SQLite run log) as a batch, and as an eval that reads each run
back from the log and scores it (contains, tool_called, no_tool_errors, max_turns).

    uv run python bench/evals.py [--cases 1000] [--rounds 3]

Each configuration runs in a fresh process, `--rounds` times interleaved, and reports its CPU
milliseconds per case (its own process: user + system, imports aside) and its wall time; this
prints a JSON object with every sample, the medians and the ratio of the eval's median CPU per
case to the batch's (the target: at most 1.2). Bench S14 measures the same in one process, the
two in turn (`bench/drivers/eval_batch.py`, which holds the agent and the cases).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "drivers"))

from eval_batch import eval_or_batch


def one(config: str, cases: int, folder: Path) -> dict[str, Any]:
    """Runs one configuration in this process and measures it."""
    import steadyloop.batch
    import steadyloop.evals  # noqa: F401 - imports aside: both pay them once

    started = time.monotonic()
    cpu = eval_or_batch(config, cases, folder)
    return {
        "config": config,
        "cases": cases,
        "cpu_ms_per_case": cpu,
        "wall_s": time.monotonic() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, interleaved")
    parser.add_argument("--config", choices=["batch", "eval"], default=None)
    args = parser.parse_args()
    if args.config is not None:
        with tempfile.TemporaryDirectory() as folder:
            print(json.dumps(one(args.config, args.cases, Path(folder))))
        return
    samples: dict[str, list[dict[str, Any]]] = {"batch": [], "eval": []}
    for _ in range(args.rounds):
        for config in samples:
            out = subprocess.run(
                [sys.executable, __file__, "--config", config, "--cases", str(args.cases)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            samples[config].append(json.loads(out.stdout.strip().splitlines()[-1]))
    cpu = {c: statistics.median(s["cpu_ms_per_case"] for s in runs) for c, runs in samples.items()}
    print(json.dumps({
        "cases": args.cases,
        "rounds": args.rounds,
        "cpu_ms_per_case": {c: round(v, 3) for c, v in cpu.items()},
        "eval_cpu_over_batch": round(cpu["eval"] / cpu["batch"], 3),
        "samples": samples,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
