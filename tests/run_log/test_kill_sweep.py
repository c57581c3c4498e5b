"""kill -9 at 100 or more random points of a tool-using logged run, each resumed: no effect
twice, no finished result lost, every transcript valid (see kill_sweep.py for the rounds)."""

from __future__ import annotations

import json
from pathlib import Path

from support.processes import run_script

SWEEP = Path(__file__).resolve().parent / "kill_sweep.py"


def test_random_kills_lose_nothing_and_repeat_nothing(tmp_path: Path) -> None:
    done = run_script(SWEEP, str(tmp_path), "100", "20261130")
    assert done.returncode == 0, done.stderr
    rounds = json.loads(done.stdout)
    logged = [r for r in rounds if not r["before_start"]]
    assert sum(r["killed"] for r in logged) >= 100  # mid-run, after the run was logged
    assert [r for r in logged if not (r["resumed_ok"] and r["status"] == "answered")] == []
    assert sum(r["charged_twice"] for r in logged) == 0
    assert sum(r["lost"] for r in logged) == 0
    assert all(r["valid"] for r in logged)
    # The sweep did hit calls in flight (answered "interrupted") and finished ones (kept).
    assert sum(r["interrupted"] for r in logged) > 0
    assert sum(r["held"] for r in logged if r["killed"]) > 0
