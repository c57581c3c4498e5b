"""The row format in `docs/run-log.md` is the one `steadyloop.store.rows` writes down: the same
run columns, the same event kinds in the same order, and each kind with the same data fields."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NotRequired, get_origin, get_type_hints

from steadyloop.store.rows import DATA_BY_KIND, EVENT_KINDS, RUN_COLUMNS, EventKind

PAGE = Path(__file__).resolve().parents[2] / "docs" / "run-log.md"
SECTION = "## What a log holds"
ROW = re.compile(r"^\| `(\w+)` \| (.*?) \|", re.MULTILINE)


def documented_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else None]


def documented_kinds() -> dict[str, list[str]]:
    """Each kind the table names, with its data fields as written (`name` or `name`?)."""
    return {
        kind: [field.strip() for field in fields.split(",")]
        for kind, fields in ROW.findall(documented_section())
    }


def typed_fields(kind: EventKind) -> list[str]:
    """A kind's data fields as the table writes them: optional ones marked with `?`."""
    hints = get_type_hints(DATA_BY_KIND[kind], include_extras=True)
    return [
        f"`{name}`?" if get_origin(hint) is NotRequired else f"`{name}`"
        for name, hint in hints.items()
    ]


def test_the_table_names_every_event_kind_in_order() -> None:
    assert list(documented_kinds()) == list(EVENT_KINDS)


def test_each_kind_has_the_data_fields_its_type_declares() -> None:
    documented = documented_kinds()
    assert {kind: documented.get(kind) for kind in EVENT_KINDS} == {
        kind: typed_fields(kind) for kind in EVENT_KINDS
    }


def test_the_run_columns_are_listed_in_order() -> None:
    section = documented_section()
    listed = re.search(r"has the columns (.*?)\.", section, re.DOTALL)
    assert listed is not None
    columns = re.findall(r"`(\w+)`", listed.group(1))
    assert columns == list(RUN_COLUMNS)
