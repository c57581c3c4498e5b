"""kill -9 at random points of logged runs that pause for approval, and right after an approved
call's effect, each resumed and approved until it answers: no effect twice, no finished
result lost, every transcript valid (see approval_kills.py for the rounds)."""

from __future__ import annotations

import json
from pathlib import Path

from support.processes import run_script

SCRIPT = Path(__file__).resolve().parent / "approval_kills.py"


def test_killed_approval_runs_lose_nothing_and_repeat_nothing(tmp_path: Path) -> None:
    done = run_script(SCRIPT, str(tmp_path), "16", "20261201")
    assert done.returncode == 0, done.stderr
    rounds = json.loads(done.stdout)
    assert sum(r["killed"] for r in rounds) >= 16
    assert [r for r in rounds if r["status"] != "answered" or r["failed_steps"]] == []
    assert sum(r["charged_twice"] for r in rounds) == 0
    assert sum(r["lost"] for r in rounds) == 0
    assert all(r["valid"] for r in rounds)
    # A kill right after an approved charge's effect answers it "interrupted", never asks again.
    at_effect = [r for r in rounds if r["at_effect"] and r["killed"]]
    assert at_effect
    assert all(r["interrupted"] == 1 for r in at_effect)
    # The random kills hit runs with finished results in the log, and those were kept.
    assert sum(r["held"] for r in rounds if r["killed"] and not r["at_effect"]) > 0
