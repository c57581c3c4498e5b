"""Draws S5's per-turn cost against history length, one line per library (matplotlib).

Runs in the harness's own environment (bench/.venvs/harness), never the project's:
`python bench/plot.py RESULTS.json OUT.png`.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLOURS = {
    "bare": "#777777",
    "steadyloop": "#d62728",
    "pydantic-ai": "#1f77b4",
    "openai-agents": "#2ca02c",
    "langgraph": "#9467bd",
    "smolagents": "#ff7f0e",
}
WINDOW = 9  # rolling median, so garbage-collector spikes do not hide the trend


def rolling_median(values: list[float], window: int) -> list[float]:
    half = window // 2
    return [statistics.median(values[max(0, i - half) : i + half + 1]) for i in range(len(values))]


def main(results_path: Path, png: Path) -> None:
    results = json.loads(results_path.read_text())
    figure, axes = plt.subplots(figsize=(9, 5.5), dpi=120)
    for name, entry in results["libraries"].items():
        s5 = entry.get("S5", {})
        curve = s5.get("per_turn_us")
        if not curve:
            continue
        turns = list(range(1, len(curve) + 1))
        label = name + (" (sync tool)" if s5.get("tool") == "sync" else "")
        axes.plot(
            turns,
            [v / 1000 for v in rolling_median(curve, WINDOW)],
            label=label,
            color=COLOURS.get(name),
            linewidth=2.2 if name == "steadyloop" else 1.4,
        )
    axes.set_yscale("log")
    axes.set_xlabel("turn (history grows by one call and one 2 KB tool result per turn)")
    axes.set_ylabel("cost of the turn, ms (log scale)")
    machine = results["machine"]
    axes.set_title(
        "Per-turn cost vs history length (S5: 200 turns, instant fake model)\n"
        f"median of runs, rolling median of {WINDOW} turns; {machine['cores']} cores, "
        f"Python {machine['python']}",
        fontsize=10,
    )
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="upper left", fontsize=9)
    figure.tight_layout()
    figure.savefig(png)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
