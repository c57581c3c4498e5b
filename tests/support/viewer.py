"""The run viewer under test: `steadyloop ui` in a process of its own on a free loopback port
(stopped by its PID), requests to it, and where the browser tests find Chromium."""

from __future__ import annotations

import concurrent.futures
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's Chromium, which Playwright drives (`.ci/run` installs it)."""


@dataclass
class Viewer:
    """A running `steadyloop ui` and the address it printed."""

    url: str
    process: subprocess.Popen[str]

    def stop(self) -> str:
        """Stops the viewer (by its PID) and returns what it wrote on stderr."""
        self.process.terminate()
        try:
            return self.process.communicate(timeout=10)[1]
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.communicate()[1]


def start_viewer(log: Path, *options: str) -> Viewer:
    """Starts `steadyloop ui --port 0 --store LOG` and waits for the address it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "steadyloop", "ui", "--port", "0", "--store", str(log), *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://\S+", line)
    if found is None:
        process.kill()
        raise AssertionError(f"the viewer did not start: {line}{process.communicate()[1]}")
    return Viewer(found.group(0), process)


@dataclass
class Reply:
    """What the viewer answered a request."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def fetch(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> Reply:
    """A request to the viewer; whatever its status, it is returned (never raised)."""
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return Reply(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as error:
        return Reply(error.code, dict(error.headers), error.read())


def off_the_loop(make: Callable[..., str], *args: object) -> str:
    """Runs `make` (which logs a run) in a thread of its own: once Playwright has started, it
    keeps an event loop running in the main thread, where `Agent.run_sync` refuses to run."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(make, *args).result()
