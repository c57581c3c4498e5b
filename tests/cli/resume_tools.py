"""Tools for the kill -9 / resume test: each call appends a line to a file in $RESUME_DIR, and the
slow ones block until the file `release` exists there, so the test can kill the run mid-call."""

from __future__ import annotations

import os
import time
from pathlib import Path

from steadyloop import tool


def _note(name: str) -> Path:
    folder = Path(os.environ["RESUME_DIR"])
    with (folder / "calls.log").open("a") as log:
        log.write(name + "\n")
    return folder


def _wait_for_release(folder: Path) -> None:
    while not (folder / "release").exists():
        time.sleep(0.05)


@tool
def record_fast() -> str:
    """Returns at once; used to check that a finished call is not run again on resume."""
    _note("record_fast")
    return "fast done"


@tool(idempotent=True)
def fetch_slow() -> str:
    """Blocks until released; idempotent, so a resumed run may call it again."""
    _wait_for_release(_note("fetch_slow"))
    return "fetched"


@tool
def charge_slow() -> str:
    """Blocks until released; has effects, so a resumed run must not call it again."""
    _wait_for_release(_note("charge_slow"))
    return "charged"
