"""The viewer's eval pages in Chromium: the list, an eval's chart and case table, and one click
from an attempt to its run. (Beside the other browser tests: Playwright keeps an event loop
running in the main thread once it has started, so the eval is made in a thread.)"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from evals import agents
from steadyloop.evals import ExactMatch, ToolCalled, evaluate
from support.viewer import Viewer, fetch, off_the_loop

CASES = Path(__file__).parents[1] / "evals" / "cases.jsonl"


def make_eval(log: Path) -> str:
    scorers = [ExactMatch(), ToolCalled("lookup"), agents.judge]
    evaluate("evals.agents:make_plain_agent", CASES, scorers, name="support-v1", store=log,
             repeat=2)  # fmt: skip
    return "support-v1"


def test_an_eval_page_charts_each_scorer_and_links_each_attempt_to_its_run(
    tmp_path: Path, page: Page, serve: Callable[[Path], Viewer]
) -> None:
    log = tmp_path / "runs.db"
    off_the_loop(make_eval, log)
    viewer = serve(log)
    base = viewer.url.rstrip("/")

    page.goto(viewer.url)
    page.get_by_role("link", name="evals").click()
    row = page.locator("tr[data-name='support-v1']")
    expect(row).to_contain_text("evals.agents:make_plain_agent")
    # The plain agent never calls its tool: no attempt passes.
    cells: list[str | re.Pattern[str]] = [
        "support-v1",
        re.compile(r"\d{4}-"),
        "evals.agents:make_plain_agent",
        "3",
        "6",
    ]
    expect(row.locator("td")).to_have_text([*cells, "0.0%", "—"])
    row.get_by_role("link", name="support-v1").click()

    expect(page).to_have_url(f"{base}/evals/support-v1")
    titles = page.locator(".score-chart rect.bar title")
    expect(titles).to_have_text(
        ["pass rate: 0.0%", "exact_match: 33.3%", "tool_called:lookup: 0.0%", "judge: 46.7%"]
    )
    spain = page.locator("tr[data-case='es']")
    expect(spain.locator("td").nth(2)).to_have_attribute(
        "title", "expected 'Madrid', got 'Paris'\nexpected 'Madrid', got 'Paris'"
    )
    spain.get_by_role("link", name="support-v1:es#2").click()

    expect(page).to_have_url(f"{base}/runs/support-v1%3Aes%232")
    expect(page.locator(".full-id")).to_have_text("support-v1:es#2")
    expect(page.locator("#transcript")).to_contain_text("Paris")
    assert fetch(f"{base}/api/evals/support-v1").json()["summary"]["attempts"] == 6
    assert fetch(f"{base}/api/evals/nope").status == 404
