"""Smoke check of the batch benchmark (`bench/batch.py --quick`): it runs end to end and
reports every configuration asked for; the figures themselves belong in bench/README.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_batch_benchmark_runs_each_configuration() -> None:
    script = ROOT / "bench" / "batch.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick", "--only", "bare,local,sqlite"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout[: done.stdout.index("\n}\n") + 2])
    assert set(report["results"]) == {"bare", "local", "sqlite"}
    assert all(figures["runs_per_s"] > 0 for figures in report["results"].values())
    assert "| sqlite |" in done.stdout
