"""Every place a run's text can reach, gathered so a test can look for a secret in all of them:
the command line's output, the run log's bytes on disk, `steadyloop export`, the viewer's JSON
API, the caller's exception (as a traceback prints it, causes included) and the spans."""

from __future__ import annotations

import contextlib
import subprocess
import traceback
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from steadyloop.cli import main
from steadyloop.store import RunStore
from support.cli import cli_process
from support.http import closed_port
from support.viewer import start_viewer

Places = dict[str, str]  # place -> all the text found there
__all__ = ["cli_run", "closed_port", "failure_places", "holding", "logged_places", "span_places"]


def cli_run(spec: str, env: Mapping[str, str], log: Path) -> subprocess.CompletedProcess[str]:
    """`steadyloop run --model SPEC --store LOG "hello"` in a process of its own, with `env`."""
    return cli_process("run", "--model", spec, "--store", str(log), "hello", env=env)


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
    viewer = start_viewer(log)
    try:
        paths = ["api/runs"]
        for run_id in ids:
            paths += [f"api/runs/{run_id}", f"api/runs/{run_id}/events"]
        answers = []
        for path in paths:
            with urllib.request.urlopen(f"{viewer.url.rstrip('/')}/{path}", timeout=30) as reply:
                answers.append(reply.read().decode())
        return "\n".join(answers)
    finally:
        viewer.stop()
