"""Run ids as people type them: an id steadyloop generated may be shortened to a unique prefix,
as `steadyloop logs` shows it; an id the caller gave is only ever matched whole."""

from __future__ import annotations

import re

from steadyloop.errors import ConfigError
from steadyloop.store.protocol import RunLog
from steadyloop.store.rows import RunInfo

__all__ = ["GENERATED_ID", "find_run", "short_id"]

GENERATED_ID = re.compile(r"[0-9a-f]{32}")
MIN_PREFIX = 4
SHOWN_CANDIDATES = 5


def find_run(store: RunLog, text: str) -> RunInfo:
    """The run `text` names: its whole id, or a unique prefix (4 characters at least) of an id
    steadyloop generated. Ids given by the caller are only ever matched whole, so `t1` never
    finds `t10`. `ConfigError` when no run matches, or when several do (naming them)."""
    found = store.find(text)
    if found is not None:
        return found
    if len(text) >= MIN_PREFIX and re.fullmatch(r"[0-9a-f]+", text):
        matches = [
            run
            for run in store.runs_with_prefix(text, limit=SHOWN_CANDIDATES + 1)
            if GENERATED_ID.fullmatch(run.id)
        ]
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(run.id for run in matches[:SHOWN_CANDIDATES])
            more = " and more" if len(matches) > SHOWN_CANDIDATES else ""
            raise ConfigError(
                f"run id {text!r} is ambiguous in {store.location}: it starts {shown}{more}; "
                "give more of it"
            )
    raise ConfigError(f"no run {text!r} in {store.location}; `steadyloop logs` lists them")


def short_id(run_id: str) -> str:
    """How a run id is shown: generated ones by their first 12 characters."""
    return run_id[:12] if GENERATED_ID.fullmatch(run_id) else run_id
