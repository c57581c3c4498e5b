"""The run viewer under test: `steadyloop ui` in a process of its own on a free loopback port,
and a headless Chromium (Debian's, driven by Playwright) to look at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from support.viewer import CHROMIUM, Viewer, start_viewer


@pytest.fixture
def serve() -> Iterator[Callable[[Path], Viewer]]:
    """Starts viewers of run logs; each is stopped after the test."""
    viewers: list[Viewer] = []

    def start(log: Path) -> Viewer:
        viewers.append(start_viewer(log))
        return viewers[-1]

    yield start
    for viewer in viewers:
        viewer.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless; the tests that need it are skipped when it is missing.
    One per test module, closed once its tests are done: Playwright's event loop runs in this
    thread while it is open, and the tests of other modules call `asyncio.run`."""
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (see .ci/run)")
    expect.set_options(timeout=20_000)  # a busy machine may be slow; nothing here is timed
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page; the test fails if the viewer's script raised anything on it."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == []
