"""The `steadyloop` command line; `main(argv)` returns the exit code."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence

__all__ = ["entry", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line with `argv` (default: sys.argv[1:]) and returns its exit code."""
    import click

    from steadyloop.cli.app import cli
    from steadyloop.cli.common import EXIT_INTERRUPTED

    args = list(argv) if argv is not None else None
    try:
        result = cli.main(args=args, prog_name="steadyloop", standalone_mode=False)
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if os.environ.get("STEADYLOOP_DEBUG"):
            raise
        print(
            f"error: unexpected {type(exc).__name__}: {exc} (set STEADYLOOP_DEBUG=1 to see the "
            "traceback)",
            file=sys.stderr,
        )
        return 1
    return result if isinstance(result, int) else 0


def entry() -> None:
    """The `steadyloop` script: `main`, then exit without waiting on tool threads that still run.

    A sync tool that timed out or was interrupted keeps its thread until it returns (threads
    cannot be killed); the interpreter would wait for it at exit, so a hung tool would hang the
    command after its answer was printed.

    The command line's own modules are loaded first and the objects they made are frozen out
    of the cyclic collector's reach (`gc.freeze`): they live as long as the process, and each
    collection while the provider's SDK loads and the run goes on would walk them all again.
    Only this script does it, never `main` (a program calling it keeps its collector as it is).
    """
    import gc

    import steadyloop.cli.app  # noqa: F401  (the commands, loaded before the freeze)

    gc.freeze()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    for thread in threading.enumerate():
        if thread.name.startswith("steadyloop-tool"):
            thread.join(timeout=0.2)
            if thread.is_alive():
                os._exit(code)
    sys.exit(code)
