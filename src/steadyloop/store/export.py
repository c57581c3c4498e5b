"""A run as JSON lines (`steadyloop export`, `steadyloop import`): its row, each event, then an
end line that counts the events, so an export cut short is recognised. Loss-free. An export made
before runs had links (`LINK_COLUMNS`) reads as a run with none."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from steadyloop.errors import ConfigError
from steadyloop.store.rows import LINK_COLUMNS, RUN_COLUMNS, LoggedEvent

__all__ = ["export_lines", "read_export"]


def export_lines(run: Sequence[Any], events: Sequence[LoggedEvent]) -> Iterator[str]:
    """A run as JSON lines: its row, each event, then an end line that counts the events (so an
    export cut short is recognised); loss-free."""
    yield json.dumps({"type": "run", **dict(zip(RUN_COLUMNS, run, strict=True))})
    for event in events:
        yield json.dumps(
            {"type": "event", "seq": event.seq, "at": event.at, "kind": event.kind,
             "data": event.data}
        )  # fmt: skip
    yield json.dumps({"type": "end", "events": len(events)})


def read_export(lines: Iterable[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run row and events of a whole export; `ConfigError` naming the first thing wrong."""
    parsed: list[Any] = []
    number = 0
    try:
        for line in lines:
            number += 1
            if line.strip():
                parsed.append(json.loads(line))
    except UnicodeDecodeError:
        raise ConfigError("not a steadyloop run export: the file is not UTF-8 text") from None
    except ValueError:
        raise ConfigError(f"not a steadyloop run export: line {number} is not JSON") from None
    if not parsed or not isinstance(parsed[0], dict) or parsed[0].get("type") != "run":
        raise ConfigError(
            "not a steadyloop run export: the first line must be the run (from `steadyloop export`)"
        )
    run, *events, end = parsed if len(parsed) > 1 else (*parsed, None)
    if not isinstance(end, dict) or end.get("type") != "end" or end.get("events") != len(events):
        raise ConfigError(
            "the run export is cut short (its end line is missing or does not match): "
            "export the run again"
        )
    for column in LINK_COLUMNS:
        run.setdefault(column, None)
    missing = [column for column in RUN_COLUMNS if column not in run]
    if missing:
        raise ConfigError(f"not a steadyloop run export: the run line lacks {', '.join(missing)}")
    for number, event in enumerate(events, 2):
        if (
            not isinstance(event, dict)
            or event.get("type") != "event"
            or not {"seq", "at", "kind", "data"} <= event.keys()
        ):
            raise ConfigError(f"not a steadyloop run export: line {number} is not an event")
    return run, events
