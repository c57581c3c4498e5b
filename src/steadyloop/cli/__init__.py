"""The `steadyloop` command line; `main(argv)` returns the exit code."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line with `argv` (default: sys.argv[1:]) and returns its exit code."""
    from steadyloop.cli.app import cli

    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="steadyloop")
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
