"""Every place a run's text can reach, gathered so a test can look for a secret in all of them:
the command line's output, the run log's bytes on disk, `steadyloop export`, the viewer's JSON
API, the caller's exception (as a traceback prints it, causes included) and the spans."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import traceback
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from steadyloop.cli import main
from steadyloop.store import RunStore

Places = dict[str, str]  # place -> all the text found there


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: a server that is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def cli_run(spec: str, env: Mapping[str, str], log: Path) -> subprocess.CompletedProcess[str]:
    """`steadyloop run --model SPEC --store LOG "hello"` in a process of its own, with `env`."""
    return subprocess.run(
        [sys.executable, "-m", "steadyloop", "run", "--model", spec, "--store", str(log), "hello"],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def logged_places(log: Path) -> Places:
    """The run log's files byte for byte, `steadyloop export` of every run in it, and what the
    viewer's API answers for each."""
    files = sorted(log.parent.glob(log.name + "*"))  # runs.db, runs.db-wal, runs.db-shm
    places = {f"run log {file.name}": file.read_bytes().decode("latin-1") for file in files}
    with contextlib.closing(RunStore(log, read_only=True)) as store:
        ids = [run.id for run in store.runs()]
    assert ids, "the run was not logged"
    exported = []
    for run_id in ids:
        out = log.parent / f"{run_id}.jsonl"
        assert main(["export", run_id, "--store", str(log), "-o", str(out)]) == 0
        exported.append(out.read_text())
    places["steadyloop export"] = "\n".join(exported)
    places["viewer API"] = _viewer_json(log, ids)
    return places


def failure_places(error: BaseException) -> Places:
    """The caller's exception: its text, and the traceback printed when nobody catches it."""
    return {
        "exception": str(error),
        "traceback": "".join(traceback.format_exception(error)),
    }


def span_places(spans: tuple[ReadableSpan, ...]) -> Places:
    """Each span as JSON, status, attributes and events included."""
    assert spans, "nothing was traced"
    return {f"span {span.name}": span.to_json() for span in spans}


def holding(places: Places, secret: str) -> list[str]:
    """The places whose text holds `secret`."""
    return [place for place, text in places.items() if secret in text]


def _viewer_json(log: Path, ids: list[str]) -> str:
    """`steadyloop ui` on `log` in a process of its own: its answers to the run list, each
    run's page and each run's events."""
    viewer = subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "ui", "--port", "0", "--store", str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert viewer.stdout is not None
        line = viewer.stdout.readline()
        found = re.search(r"http://\S+/", line)
        if found is None:
            viewer.kill()
            raise AssertionError(f"the viewer did not start: {line}{viewer.communicate()[1]}")
        paths = ["api/runs"]
        for run_id in ids:
            paths += [f"api/runs/{run_id}", f"api/runs/{run_id}/events"]
        answers = []
        for path in paths:
            with urllib.request.urlopen(found.group(0) + path, timeout=30) as response:
                answers.append(response.read().decode())
        return "\n".join(answers)
    finally:
        viewer.terminate()
        viewer.communicate(timeout=30)
