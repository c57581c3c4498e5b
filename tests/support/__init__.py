"""What the test folders share, written once: the Postgres server, stopping processes by PID,
the command line in-process and as a process, sample files, local HTTP servers, and the places
a secret must never reach. `tests/` is on `sys.path` (pytest's `pythonpath`), so a test imports
`from support.postgres import new_database`."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
"""The `tests/` folder: what a child Python needs on its `PYTHONPATH` to import `support` and
the test folders' helpers (see `support.processes.python_env`)."""
