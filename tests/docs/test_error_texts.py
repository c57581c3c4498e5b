"""The errors-as-text page quotes what the model reads word for word, from `steadyloop.texts`:
every quoted text is one of the module's texts as it is now, and every error result the loop
writes is quoted."""

from __future__ import annotations

import re
import string
from pathlib import Path

from steadyloop import texts

PAGE = Path(__file__).parents[2] / "docs" / "patterns" / "errors-as-text.md"

# The error results the model reads, each of which the page must quote.
ERROR_RESULTS = (
    "UNKNOWN_TOOL",
    "NO_NAME",
    "NOT_JSON",
    "NOT_AN_OBJECT",
    "TIMED_OUT",
    "FAILED",
    "AFTER_ATTEMPTS",
    "STOPPED",
    "CANCELLED",
    "CUT_OFF",
    "ALREADY_HAVE",
    "UNANSWERED",
    "INTERRUPTED",
    "DENIED",
    "WAITING",
    "CALL_LIMIT",
    "TOOL_CALL_LIMIT",
    "CHILD_STOPPED",
    "CHILD_PAUSED",
    "NO_BUDGET",
)


class _Placeholders(dict[str, str]):
    """Fills every `{field}` of a template with `<field>`, as the docs write them."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def as_documented(template: str) -> str:
    return string.Formatter().vformat(template, (), _Placeholders())


def quoted_on_page() -> set[str]:
    """Every `"..."` the page's tables quote (in backticks)."""
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("|")]
    return {text for row in rows for text in re.findall(r'`"([^`]+)"`', row)}


def test_every_text_the_page_quotes_is_one_the_loop_writes() -> None:
    written = {as_documented(getattr(texts, name)) for name in texts.__all__}
    stale = quoted_on_page() - written
    assert not stale, f"the page quotes texts steadyloop.texts no longer has: {stale}"


def test_the_page_quotes_every_error_result() -> None:
    missing = {
        name
        for name in ERROR_RESULTS
        if as_documented(getattr(texts, name)) not in quoted_on_page()
    }
    assert not missing, f"the page does not quote these texts of steadyloop.texts: {missing}"
