"""A reasoning model's reply in the viewer: its readable reasoning under the reply, collapsed."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from steadyloop import Agent, AssistantMessage
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel
from steadyloop.ui.entries import transcript
from support.viewer import off_the_loop, start_viewer

THINKING = "The user wants the capital of France."


def reasoned_run(store: RunStore) -> str:
    reply = AssistantMessage("Paris.", reasoning_text=THINKING)
    run_id = Agent(ScriptedModel([reply]), store=store).run_sync("Capital?").run_id
    assert run_id is not None
    return run_id


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("reasoning") / "runs.db"
    store = RunStore(path)
    run_id = off_the_loop(reasoned_run, store)
    store.close()
    return path, run_id


def test_the_reply_entry_carries_its_reasoning(log: tuple[Path, str]) -> None:
    path, run_id = log
    store = RunStore(path)
    entries = transcript(store.events(run_id), 0)
    store.close()
    (reply,) = [e for e in entries if e["kind"] == "reply"]
    assert reply["reasoning"] == THINKING
    assert reply["text"] == "Paris."


def test_the_reasoning_shows_collapsed_under_the_reply(page: Page, log: tuple[Path, str]) -> None:
    path, run_id = log
    viewer = start_viewer(path)
    try:
        page.goto(f"{viewer.url}runs/{run_id[:8]}")
        reply = page.locator("#transcript .entry.reply")
        reasoning = reply.locator("details.reasoning")
        expect(reasoning).to_have_count(1)
        expect(reasoning).not_to_have_attribute("open", "")
        expect(reasoning.locator("pre")).not_to_be_visible()
        reasoning.locator("summary").click()
        expect(reasoning.locator("pre")).to_have_text(THINKING)
        expect(reply.locator("pre.text").last).to_have_text("Paris.")
    finally:
        viewer.stop()
