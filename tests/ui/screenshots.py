"""Takes the pictures of the run viewer in docs/viewer.md, from a log of demo runs made offline.

    uv run python tests/ui/screenshots.py docs/images

The runs are made by the real Agent with the shipped fake models (their model names and token
counts are made up; the fakes have no price, so no cost is shown); tools and the model pause a
little so that the timeline has something to show. One run is left waiting in a tool, so the
list shows a live run too.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from playwright.sync_api import sync_playwright

from steadyloop import Agent, AssistantMessage, Message, tool
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec
from support.viewer import CHROMIUM, start_viewer
from ui.runlogs import (
    answered_run,
    call,
    failed_run,
    limit_run,
    parallel_run,
    reply,
    resumed_run,
)


def main(folder: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        store = RunStore(Path(scratch) / "runs.db")
        for make in (failed_run, resumed_run, limit_run, answered_run):
            make(store)
        parallel = parallel_run(store, pause=0.35)
        release = threading.Event()
        live = threading.Thread(target=_waiting_run, args=(store, release))
        live.start()
        viewer = start_viewer(store.path)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=["--no-sandbox"]
                )
                page = browser.new_page(viewport={"width": 1200, "height": 400})
                page.goto(viewer.url)
                page.wait_for_selector("tbody .status-running")
                page.screenshot(path=folder / "ui-runs.png")
                page.set_viewport_size({"width": 1200, "height": 1000})
                page.goto(f"{viewer.url}runs/{parallel[:8]}")
                page.wait_for_selector(".entry.finished")
                page.screenshot(path=folder / "ui-run.png")
                browser.close()
        finally:
            release.set()
            live.join()
            viewer.stop()
            store.close()


def _waiting_run(store: RunStore, release: threading.Event) -> None:
    @tool
    def wait_for_approval(ticket: str) -> str:
        """Blocks until a person approves the ticket; returns who did."""
        release.wait(120)
        return f"{ticket} approved"

    def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        if len(messages) == 1:
            return reply(call("w", "wait_for_approval", ticket="T-204"), tokens=(640, 28))
        return reply(text="T-204 is approved.", tokens=(700, 12))

    agent = Agent(FunctionModel(decide, name="gpt-4.1-mini"), tools=[wait_for_approval],
                  store=store)  # fmt: skip
    agent.run_sync("Refund order B-12 once T-204 is approved.")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
