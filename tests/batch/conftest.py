"""Fixtures for the batch tests: the fake agents' settings and a local Ray cluster (the run logs
on each store are the root conftest's `store_url`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batch import agents
from batch.files import RAY_ENV, ray_worker_env
from support.processes import stop_processes_under


@pytest.fixture(autouse=True)
def fake_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quick fake model and tools, counters at zero, and no log unless a test asks for one."""
    monkeypatch.setenv("BATCH_TEST_SLEEP", "0.001,0.004")
    monkeypatch.delenv("BATCH_TEST_JOURNAL", raising=False)
    monkeypatch.delenv("BATCH_TEST_DIE_AT", raising=False)
    monkeypatch.delenv("BATCH_TEST_TURNS", raising=False)
    monkeypatch.delenv("BATCH_TEST_HOLD", raising=False)
    agents.MODEL_CALLS.clear()
    agents.STEPS.clear()
    agents.BUILT.clear()
    agents.WIRES.clear()


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
