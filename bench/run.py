"""Benchmarks: steadyloop against a bare asyncio loop and, with --peers, the usual frameworks.

    python bench/run.py            # steadyloop and the bare loop
    python bench/run.py --peers    # + pydantic-ai, openai-agents, langgraph, smolagents

Stdlib only. Each library gets its own virtual environment under bench/.venvs/ (made with uv,
pinned, on first use); each scenario runs in a fresh subprocess of that environment and prints
JSON, which this script collects into bench/results/ along with a table (Markdown) and a plot of
per-turn cost against history length. `--publish` also refreshes the committed summary: the
table in bench/README.md, bench/latest.json and bench/per_turn_cost.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import envs
import report

BENCH = envs.BENCH
DRIVERS = BENCH / "drivers"
PER_PROCESS = ("S1", "S2", "S5")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--peers", action="store_true", help="also run the peer frameworks")
    parser.add_argument("--only", help="comma-separated libraries to run (bare,steadyloop,...)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke check")
    parser.add_argument(
        "--no-venv",
        action="store_true",
        help="run bare and steadyloop with this interpreter (steadyloop must be importable)",
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the matplotlib plot")
    parser.add_argument("--out", type=Path, default=BENCH / "results", help="results folder")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds over all libraries; each runs every scenario once per library, and the "
        "samples of all rounds are pooled (so a busy moment of the machine hits all alike)",
    )
    parser.add_argument("--s4-samples", type=int, default=9, help="fresh interpreters for S4")
    parser.add_argument(
        "--publish", action="store_true", help="update bench/README.md, latest.json and the PNG"
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="measure nothing: redo the table, plot (and --publish) from a results JSON",
    )
    args = parser.parse_args(argv)
    if args.source is not None:
        results = json.loads(args.source.read_text())
        return write_outputs(results, args, args.source)

    libraries = [lib for lib in envs.LIBRARIES if args.peers or not lib.peer]
    if args.only:
        wanted = {name.strip() for name in args.only.split(",")}
        unknown = wanted - {lib.name for lib in envs.LIBRARIES}
        if unknown:
            parser.error(
                f"unknown libraries {sorted(unknown)}: use {[lib.name for lib in envs.LIBRARIES]}"
            )
        libraries = [lib for lib in envs.LIBRARIES if lib.name in wanted]
    if args.no_venv and any(lib.peer for lib in libraries):
        parser.error("--no-venv runs only bare and steadyloop: the peers need their environments")
    if args.quick:
        args.rounds, args.s4_samples = 1, 2

    started = time.perf_counter()
    results: dict[str, Any] = {
        "machine": machine(),
        "quick": args.quick,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "rounds": args.rounds,
        "load_before": load_average(),
        "libraries": {},
    }
    pythons = {
        lib.name: Path(sys.executable) if args.no_venv else envs.ensure(lib.name, lib.packages)
        for lib in libraries
    }
    rounds: dict[str, list[dict[str, Any]]] = {lib.name: [] for lib in libraries}
    for number in range(1, args.rounds + 1):
        for lib in libraries:
            print(f"[round {number}/{args.rounds}] {lib.name}", flush=True)
            rounds[lib.name].append(run_library(lib, pythons[lib.name], args))
    for lib in libraries:
        results["libraries"][lib.name] = merge(rounds[lib.name])
        results["libraries"][lib.name]["S4"] = import_time(
            pythons[lib.name], lib.entry, args.s4_samples
        )
        if lib.name == "steadyloop":  # `import steadyloop` defers its names: this loads them
            results["libraries"][lib.name]["S4_agent"] = import_time(
                pythons[lib.name], "from steadyloop import Agent", args.s4_samples
            )
    if "steadyloop" in pythons:
        results["libraries"]["steadyloop"]["profiles"] = profiles(pythons["steadyloop"], args.quick)
    results["load_after"] = load_average()
    results["seconds"] = round(time.perf_counter() - started, 1)

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    json_path = args.out / f"results-{stamp}.json"
    json_path.write_text(json.dumps(results, indent=1))
    return write_outputs(results, args, json_path)


def write_outputs(results: dict[str, Any], args: argparse.Namespace, json_path: Path) -> int:
    """The table (printed and saved), the plot, and with --publish the committed summary."""
    args.out.mkdir(parents=True, exist_ok=True)
    if json_path.resolve() != (args.out / "latest.json").resolve():
        shutil.copyfile(json_path, args.out / "latest.json")
    table = report.markdown(results)
    (args.out / "latest.md").write_text(table)
    print()
    print(table)
    print(f"results: {json_path}")

    if not args.no_plot:
        png = args.out / "per_turn_cost.png"
        plot(json_path, png)
        print(f"plot: {png}")
        if args.publish:
            shutil.copyfile(png, BENCH / "per_turn_cost.png")
    if args.publish:
        (BENCH / "latest.json").write_text(json.dumps(report.strip_curves(results), indent=1))
        report.update_readme(BENCH / "README.md", table)
        print("published: bench/README.md, bench/latest.json, bench/per_turn_cost.png")
    return 0


def run_library(lib: envs.Library, python: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Every scenario for one library, each in fresh processes of its interpreter."""
    entry: dict[str, Any] = {}
    driver = DRIVERS / lib.driver
    flags = ["--quick"] if args.quick else []
    seconds: dict[str, float] = {}
    scenarios = [*PER_PROCESS, "S3"]
    if lib.name == "steadyloop":
        scenarios += ["S6", "S7", "S9", "S10", "S13", "S14"]
    for scenario in scenarios:
        output = run_driver(python, driver, scenario, flags)
        seconds[scenario] = output["seconds"]
        entry["versions"] = output["versions"]
        entry[scenario] = output["figures"]
    entry["S3"] = {k: spread([v]) if k in S3_SPREADS else v for k, v in entry["S3"].items()}
    entry["seconds"] = seconds
    return entry


S3_SPREADS = ("wall_s", "cpu_ms_per_run", "peak_rss_mb", "rss_before_mb")


def merge(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One library's rounds as one: samples pooled, S5 curves as the median curve, and each
    scenario's seconds per round (how long a run of the harness takes, scenario by scenario)."""
    first = rounds[0]
    merged: dict[str, Any] = {
        "versions": first["versions"],
        "seconds": {s: [r["seconds"][s] for r in rounds] for s in first["seconds"]},
    }
    for scenario, figures in first.items():
        if scenario in ("versions", "seconds"):
            continue
        merged[scenario] = {
            key: _merge_value([r[scenario][key] for r in rounds]) for key in figures
        }
    return merged


def _merge_value(values: list[Any]) -> Any:
    first = values[0]
    if isinstance(first, dict) and "values" in first:
        return spread([v for value in values for v in value["values"]])
    if isinstance(first, list) and first and isinstance(first[0], (int, float)):
        return [statistics.median(column) for column in zip(*values, strict=True)]
    return first


def run_driver(python: Path, driver: Path, scenario: str, flags: list[str]) -> dict[str, Any]:
    """Runs one scenario of one driver in a fresh process and returns its JSON, with the
    seconds it took."""
    began = time.perf_counter()
    process = subprocess.run(
        [str(python), str(driver), scenario, *flags],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=False,
    )
    if process.returncode != 0:
        sys.exit(
            f"{driver.name} {scenario} failed (exit {process.returncode}):\n"
            + process.stderr[-4000:]
        )
    output: dict[str, Any] = json.loads(process.stdout.strip().splitlines()[-1])
    output["seconds"] = round(time.perf_counter() - began, 1)
    print(f"  {scenario} done in {output['seconds']}s", flush=True)
    return output


def import_time(python: Path, statement: str, samples: int) -> dict[str, Any]:
    """Milliseconds `statement` adds to a fresh interpreter's start (median of paired samples)."""

    def wall(code: str) -> float:
        began = time.perf_counter()
        subprocess.run([str(python), "-c", code], check=True, env=clean_env())
        return (time.perf_counter() - began) * 1000

    wall(statement)  # compile the .pyc files once
    empty, loaded = [], []
    for _ in range(samples):
        empty.append(wall("pass"))
        loaded.append(wall(statement))
    result = spread([b - a for a, b in zip(empty, loaded, strict=True)])
    result["statement"] = statement
    result["bare_python_ms"] = statistics.median(empty)
    return result


# Each profile of `profile_steadyloop.py`: its flags, and the start of the targets whose miss it
# explains (the report names the profile below a missed target starting so).
PROFILED = {
    "S1": ([], "S1 per turn"),
    "S3": (["--concurrent"], "S3 "),
    "S6": (["--store"], "S6 run log's"),
    "S6 batch": (["--store", "--durability", "batch"], 'S6 run log with durability="batch"'),
    "S7": (["--concurrent", "--traced"], "S7 "),
    "S9": (["--mcp"], "S9 "),
    "S10 sync approver": (["--approver", "sync"], "S10 approval gate, a sync"),
    "S10 async approver": (["--approver", "async"], "S10 approval gate, an async"),
    "S14 eval": (["--eval"], "S14 eval / batch"),
}
PSTATS_ROW = re.compile(r"^\s*[\d/]+\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\S.*)$")
PSTATS_TOTAL = re.compile(r"function calls.* in ([\d.]+) seconds")


def profiles(python: Path, quick: bool, top: int = 5) -> dict[str, Any]:
    """steadyloop's top functions by own time in each profiled scenario (cProfile), so a
    missed target can name where the time goes."""
    found: dict[str, Any] = {}
    for name, (flags, explains) in PROFILED.items():
        command = [str(python), str(BENCH / "profile_steadyloop.py"), "--top", str(top), *flags]
        command += ["--runs", "5" if quick else "200"]
        output = subprocess.run(
            command, capture_output=True, text=True, env=clean_env(), check=True
        ).stdout
        total = PSTATS_TOTAL.search(output)
        rows = [m.groups() for line in output.splitlines() if (m := PSTATS_ROW.match(line))]
        if not rows:
            continue  # nothing to profile here (S9 without Node.js)
        found[name] = {
            "explains": explains,
            "total_s": float(total.group(1)) if total else None,
            "top": [{"own_s": float(own), "function": where} for own, where in rows[:top]],
        }
    return found


def spread(values: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
        "values": values,
    }


def load_average() -> list[float] | None:
    """The machine's 1/5/15-minute load: other work on it makes every figure noisier."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def clean_env() -> dict[str, str]:
    """The environment for subprocesses: no stray PYTHONPATH, no bytecode skipping."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def plot(results: Path, png: Path) -> None:
    """Draws the S5 curves with matplotlib from the harness's own environment."""
    python = envs.ensure("harness", envs.HARNESS_PACKAGES)
    subprocess.run(
        [str(python), str(BENCH / "plot.py"), str(results), str(png)], check=True, env=clean_env()
    )


if __name__ == "__main__":
    raise SystemExit(main())
