"""The README's Python blocks marked `<!-- runnable -->` run as written, offline, so they cannot
drift from the library."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
RUNNABLE = re.compile(r"^<!-- runnable -->\n```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def runnable_blocks() -> list[str]:
    return RUNNABLE.findall(README.read_text())


def test_the_testing_snippet_is_marked_runnable() -> None:
    assert any("steadyloop.testing" in block for block in runnable_blocks())


@pytest.mark.parametrize("block", runnable_blocks())
def test_runnable_block_runs(block: str) -> None:
    exec(compile(block, str(README), "exec"), {"__name__": "readme"})
