"""Run ids on the command line: shown short when steadyloop made them, found by a prefix."""

from __future__ import annotations

import re

from steadyloop.errors import ConfigError
from steadyloop.store import RunInfo, RunLog

__all__ = ["GENERATED_ID", "find_run", "short_id"]

GENERATED_ID = re.compile(r"[0-9a-f]{32}")


def find_run(store: RunLog, text: str) -> RunInfo:
    """The run `text` names: its whole id, or a unique prefix (4 characters at least) of an id
    steadyloop generated. Ids given by the caller are only ever matched whole, so `t1` never
    finds `t10`."""
    found = store.find(text)
    if found is not None:
        return found
    if len(text) >= 4 and re.fullmatch(r"[0-9a-f]+", text):
        matches = [r for r in store.runs_with_prefix(text, limit=3) if GENERATED_ID.fullmatch(r.id)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ConfigError(f"run id {text!r} is ambiguous in {store.location}: give more of it")
    raise ConfigError(f"no run {text!r} in {store.location}; `steadyloop logs` lists them")


def short_id(run_id: str) -> str:
    """How the command line shows a run id: generated ones by their first 12 characters."""
    return run_id[:12] if GENERATED_ID.fullmatch(run_id) else run_id
