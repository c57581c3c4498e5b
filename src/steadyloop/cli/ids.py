"""Run ids on the command line: shown short when steadyloop made them, found by a prefix (the
library's own lookup, `steadyloop.store.ids`, which `Agent.resume` uses as well)."""

from __future__ import annotations

from steadyloop.store.ids import GENERATED_ID, find_run, short_id

__all__ = ["GENERATED_ID", "find_run", "short_id"]
