"""2,000 logged runs with transient faults, each on an agent nobody closes: threads, open files
and memory stay flat (see soak.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SOAK = Path(__file__).resolve().parent / "soak.py"


def test_thousands_of_runs_leave_no_threads_files_or_memory_behind(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SOAK), str(tmp_path / "runs.db"), "2000"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    warm, end = figures["warm"], figures["end"]
    assert end["threads"] == warm["threads"]
    assert end["files"] == warm["files"]
    assert end["rss_kb"] - warm["rss_kb"] < 8 * 1024  # after 1,800 more runs
