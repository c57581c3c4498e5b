"""Helpers for the run-log tests: processes running a scripted run, and waiting on them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "scripted_run.py"


def start_run(store: Path, mode: str, *extra: str) -> subprocess.Popen[str]:
    """Starts `scripted_run.py STORE MODE ...` in a process of its own."""
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(store), mode, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(process: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    """Waits for the process (killing it by its PID if it overstays) and returns its results."""
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, out, err


def wait_for(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the condition")
        time.sleep(0.01)


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().split() if log.exists() else []
