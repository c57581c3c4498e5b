"""`steadyloop batch --ray HOST:PORT` against a cluster started with `ray start --head` on
127.0.0.1 (stopped by its processes' PIDs at the end)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from batch.files import HERE, RAY_ENV, ray_worker_env, read_rows, write_tasks
from support.processes import python_env, stop_processes_under


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def ray_cluster() -> Iterator[str]:
    """A one-node Ray cluster on 127.0.0.1; yields its address."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'steadyloop[ray]'")
    folder = Path(tempfile.mkdtemp(prefix="slrc", dir="/tmp"))
    port = free_port()
    env = {**python_env(), **RAY_ENV, **ray_worker_env(folder)}
    try:
        subprocess.run(
            [str(Path(sys.executable).parent / "ray"), "start", "--head",
             "--node-ip-address=127.0.0.1", f"--port={port}", f"--temp-dir={folder}",
             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
            env=env, check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        yield f"127.0.0.1:{port}"
    finally:
        stop_processes_under(folder)


def steadyloop_batch(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**python_env(), **RAY_ENV}
    return subprocess.run(
        [sys.executable, "-m", "steadyloop", "batch", *args],
        cwd=HERE, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_the_batch_command_runs_on_a_ray_cluster_and_a_rerun_skips_everything(
    tmp_path: Path, ray_cluster: str
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 200)
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    args = (
        str(tasks), "--agent", "batch.agents:make_agent", "--out", str(out), "--store", str(store),
        "--ray", ray_cluster, "--workers", "2", "--chunk", "20",
    )  # fmt: skip

    done = steadyloop_batch(*args)

    assert done.returncode == 0, done.stderr
    assert "200 tasks; 200 answered" in done.stdout
    rows = read_rows(out)
    assert sorted(row["id"] for row in rows) == sorted(f"t{i}" for i in range(200))
    assert {row["output"] for row in rows} == {f"TASK {i}" for i in range(200)}

    again = steadyloop_batch(*args)

    assert again.returncode == 0, again.stderr
    assert "0 answered" in again.stdout
    assert "200 done before" in again.stdout
    assert len(read_rows(out)) == 200
