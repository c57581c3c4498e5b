"""The command line, in this process (`run_cli`) or as a process of its own (`cli_process`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from steadyloop.cli import main
from support.processes import python_env


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`steadyloop ARGS` in this process: its exit code, stdout and stderr."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cli_process(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m steadyloop ARGS` as a process of its own, started in `cwd`, with `env` added
    to this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "steadyloop", *args],
        cwd=cwd, env=python_env(**(env or {})), capture_output=True, text=True, timeout=timeout,
        check=False,
    )  # fmt: skip
