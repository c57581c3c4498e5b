"""Stopping processes by their PID (never by name), and the environment of a child Python."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support import TESTS


def stop_pid(pid: int, grace: float = 10) -> None:
    """Stops a process by its PID: SIGTERM, then SIGKILL if it lingers past `grace` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def stop_processes_under(folder: Path) -> None:
    """Stops, by PID, the processes whose command line names `folder`, and their children (Ray
    renames some of its own). SIGTERM, then SIGKILL for those that linger (Ray's GCS server and
    some agents ignore SIGTERM)."""
    parents: dict[int, int] = {}
    tree: set[int] = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int(_stat(proc.name)[1])
                if str(folder).encode() in (proc / "cmdline").read_bytes():
                    tree.add(int(proc.name))
            except OSError:
                continue
    while grown := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= grown
    for pid in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 2  # some of them never act on SIGTERM
    while (alive := [pid for pid in tree if running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def running(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting for its parent."""
    try:
        return _stat(str(pid))[0] != "Z"
    except OSError:
        return False


def _stat(pid: str) -> list[str]:
    """The fields of /proc/PID/stat after the command name: state, parent PID, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def python_env(**extra: str) -> dict[str, str]:
    """This process's environment plus `extra`, with `tests/` first on `PYTHONPATH`: a child
    Python (a script of the tests, a Ray worker) imports the test folders' helpers as the tests
    do (`from batch import batch_agents`)."""
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def run_script(script: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT ARGS` in a process of its own, the test folders importable (see
    `python_env`); its output is captured as text, its exit code left to the test."""
    return subprocess.run(
        [sys.executable, str(script), *args], env=python_env(), capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip
