"""What `steadyloop run` loads: only what the run needs, so the command starts fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from steadyloop.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded_by(args: list[str], home: Path) -> tuple[int, set[str]]:
    """The exit code of the command line run with `args` in a fresh interpreter, and every
    module loaded by then."""
    process = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env={"STEADYLOOP_HOME": str(home), "PATH": ""},
        check=True,
    )
    report = json.loads(process.stdout.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


def test_run_without_a_log_loads_neither_the_log_nor_other_commands(tmp_path: Path) -> None:
    code, modules = loaded_by(["run", "--no-log", "--model", "test", "hello"], tmp_path)
    assert code == 0
    assert not {"sqlite3", "steadyloop.store.sqlite", "steadyloop.store.writer"} & modules
    # nor the log's reading side, the viewer's, or the loader of tool files no run named
    assert not {"steadyloop.store", "steadyloop.cli.show", "steadyloop.ui"} & modules
    assert "steadyloop.toolfile" not in modules
    others = {"batch", "chat", "eval", "mcp_serve", "decide"}
    assert not {f"steadyloop.cli.{name}" for name in others} & modules
    assert not (tmp_path / "runs.db").exists()


def test_run_with_the_log_writes_it(tmp_path: Path) -> None:
    code, modules = loaded_by(["run", "--model", "test", "hello"], tmp_path)
    assert code == 0
    assert "steadyloop.store.sqlite" in modules
    assert (tmp_path / "runs.db").exists()


def test_a_command_in_its_own_module_is_loaded_when_named(tmp_path: Path) -> None:
    code, modules = loaded_by(["batch", "--help"], tmp_path)
    assert code == 0
    assert "steadyloop.cli.batch" in modules
    assert "steadyloop.cli.eval" not in modules
