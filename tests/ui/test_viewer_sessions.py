"""The run viewer on runs that build on runs, in a real browser: a session's runs linked to
each other and to the session's list, a fork linked to the run it continued, a sub-agent run
linked to its parent run and call and back, all through ids that need encoding in a path; and a
log written before runs had links, whose pages show none."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest
from playwright.sync_api import Locator, Page, expect

from sessions.test_schema_upgrade import make_version_1
from steadyloop import Agent
from steadyloop.store import RunStore
from steadyloop.subagents import child_run_id
from steadyloop.testing import ScriptedModel
from support.viewer import Viewer, off_the_loop, start_viewer
from ui.runlogs import call, reply

SESSION = "user/42 & co"
TURNS = (  # run id, prompt, answer: the session's runs, in the order they ran
    ("turn/1", "My order number is A1.", "Noted: A1."),
    ("turn 2?#", "What was my order number?", "Your order number is A1."),
    ("turn%3", "Say it in French.", "Votre numéro de commande est A1."),
)
FORK = ("fork/1", "Say it in German.", "Ihre Bestellnummer ist A1.")
BOSS = ("boss/1", "Compare the vendors.", "A is the cheapest of the three.")
CALL = "c/1 #x"  # the boss's call of its sub-agent
CHILD_PROMPT, CHILD_ANSWER = "Find the vendors.", "three vendors: A, B, C"


def log_runs(store: RunStore) -> str:
    """Logs the session's three runs, a run between them in no session, a fork of the first
    into a session of its own, and a boss run whose call `CALL` runs a sub-agent (logged in
    the boss's log); returns the sub-agent run's id."""
    answers = [TURNS[0][2], "Elsewhere.", TURNS[1][2], TURNS[2][2], FORK[2]]
    agent = Agent(ScriptedModel(answers, name="gpt-4.1-mini"), store=store)
    agent.run_sync(TURNS[0][1], session=SESSION, run_id=TURNS[0][0])
    agent.run_sync("Unrelated question.", run_id="plain")
    for run_id, prompt, _ in TURNS[1:]:
        agent.run_sync(prompt, session=SESSION, run_id=run_id)
    agent.run_sync(FORK[1], session="german", fork_from=TURNS[0][0], run_id=FORK[0])

    researcher = Agent(ScriptedModel([CHILD_ANSWER], name="gpt-4.1-mini"))
    boss_model = ScriptedModel(
        [reply(call(CALL, "research", prompt=CHILD_PROMPT)), reply(text=BOSS[2])],
        name="gpt-4.1-mini",
    )
    research = researcher.as_tool(name="research", description="Researches one question.")
    Agent(boss_model, tools=[research], store=store).run_sync(BOSS[1], run_id=BOSS[0])
    return child_run_id(BOSS[0], CALL)


@dataclass
class Linked:
    """A log of linked runs, a viewer of it, and the sub-agent run's id."""

    viewer: Viewer
    child: str

    def run_url(self, run_id: str) -> str:
        return f"{self.viewer.url}runs/{quote(run_id, safe='')}"


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Linked]:
    store = RunStore(tmp_path_factory.mktemp("linked") / "runs.db")
    child = off_the_loop(log_runs, store)
    store.close()
    viewer = start_viewer(store.path)
    yield Linked(viewer, child)
    viewer.stop()


def related(page: Page) -> Locator:
    """The page's list of related runs, found as a screen reader finds it."""
    return page.get_by_role("navigation", name="related runs")


def expect_run(page: Page, run_id: str, prompt: str, answer: str) -> None:
    """The page shows run `run_id`: its address, its id, and its own prompt and answer (not
    those of the history it continued)."""
    expect(page.locator(".full-id")).to_have_text(run_id)
    assert unquote(urlsplit(page.url).path) == f"/runs/{run_id}"
    expect(page.locator(".entry.user:not(.history) pre.text")).to_have_text(prompt)
    expect(page.locator(".entry.reply:not(.history) pre.text")).to_have_text(answer)


def test_a_sessions_runs_link_to_each_other_in_order_and_to_the_sessions_list(
    page: Page, linked: Linked
) -> None:
    page.goto(linked.run_url(TURNS[1][0]))
    expect_run(page, *TURNS[1])
    links = related(page)
    expect(links).to_contain_text(SESSION)
    expect(links).to_contain_text("run 2 of 3")
    # "continues" would name the run just before it in the session: said once, not twice
    expect(links.locator("dt")).to_have_text(["session"])

    links.get_by_role("link", name="← previous run").click()
    expect_run(page, *TURNS[0])
    expect(related(page)).to_contain_text("run 1 of 3")
    expect(related(page).get_by_role("link", name="← previous run")).to_have_count(0)

    related(page).get_by_role("link", name="next run →").click()
    expect_run(page, *TURNS[1])
    related(page).get_by_role("link", name="next run →").click()
    expect_run(page, *TURNS[2])
    expect(related(page)).to_contain_text("run 3 of 3")
    expect(related(page).get_by_role("link", name="next run →")).to_have_count(0)
    # the history the run continued is there, marked as such
    expect(page.locator(".entry.user.history pre.text")).to_have_text([TURNS[0][1], TURNS[1][1]])

    related(page).get_by_role("link", name="all 3 runs in order").click()
    expect(page.locator(".session-filter")).to_have_text(f"session {SESSION} ✕")
    rows = page.locator("table.runs tbody tr")
    expect(rows).to_have_count(3)
    assert [row.get_attribute("data-id") for row in rows.all()] == [t[0] for t in TURNS]
    expect(rows.locator(".col-prompt")).to_have_text([t[1] for t in TURNS])

    rows.nth(1).locator(".col-run a").click()
    expect_run(page, *TURNS[1])


def test_a_fork_links_the_run_it_continued_from_another_session(page: Page, linked: Linked) -> None:
    page.goto(linked.run_url(FORK[0]))
    expect_run(page, *FORK)
    links = related(page)
    expect(links.locator("dt")).to_have_text(["session", "continues"])
    expect(links).to_contain_text("run 1 of 1")
    expect(links.locator("dd").nth(1)).to_contain_text(TURNS[0][1])  # the prompt it went on from
    links.get_by_role("link", name=TURNS[0][0]).click()
    expect_run(page, *TURNS[0])


def test_a_sub_agent_run_links_its_parents_call_and_the_parent_links_it_back(
    page: Page, linked: Linked
) -> None:
    page.goto(linked.run_url(BOSS[0]))
    expect_run(page, *BOSS)
    children = related(page).locator(".children li")
    expect(children).to_have_count(1)
    expect(children).to_contain_text(f"call {CALL}")
    expect(children).to_contain_text(CHILD_PROMPT)
    expect(children.locator(".status")).to_have_text("answered")

    # the child's call, on this very page, is brought into view and focused
    children.get_by_role("link", name=f"call {CALL}").click()
    target = page.locator(".calls li.target")
    expect(target).to_contain_text(f"research {CALL}")
    expect(target).to_be_focused()

    children.get_by_role("link", name=linked.child[:8]).click()
    expect_run(page, linked.child, CHILD_PROMPT, CHILD_ANSWER)
    parent = related(page)
    expect(parent.locator("dt")).to_have_text(["sub-agent of"])
    expect(parent).to_contain_text(BOSS[1])

    parent.get_by_role("link", name=f"call {CALL}").click()
    expect_run(page, *BOSS)
    assert unquote(urlsplit(page.url).fragment) == f"call-{CALL}"
    target = page.locator(".calls li.target")
    expect(target).to_contain_text(f"research {CALL}")
    expect(target).to_be_focused()
    expect(target).to_be_in_viewport()

    # the call in the transcript links the run it started
    target.get_by_role("link", name=f"sub-agent run {linked.child[:8]} →").click()
    expect_run(page, linked.child, CHILD_PROMPT, CHILD_ANSWER)
    related(page).get_by_role("link", name=BOSS[0]).click()
    expect_run(page, *BOSS)


def log_child_elsewhere(child_log: Path, boss_log: Path) -> str:
    """Logs a boss run in `boss_log` whose sub-agent has a log of its own, `child_log`;
    returns the sub-agent run's id."""
    researcher = Agent(ScriptedModel([CHILD_ANSWER]), store=child_log)
    boss_model = ScriptedModel([reply(call(CALL, "research", prompt=CHILD_PROMPT)), "Done."])
    research = researcher.as_tool(name="research", description="Researches one question.")
    boss = Agent(boss_model, tools=[research], store=boss_log)
    boss.run_sync(BOSS[1], run_id=BOSS[0])
    boss.close_store()
    researcher.close_store()
    return child_run_id(BOSS[0], CALL)


def test_a_parent_run_in_another_log_is_named_not_linked(
    page: Page, serve: Callable[[Path], Viewer], tmp_path: Path
) -> None:
    child_log = tmp_path / "research.db"
    child = off_the_loop(log_child_elsewhere, child_log, tmp_path / "boss.db")
    page.goto(f"{serve(child_log).url}runs/{child}")
    expect_run(page, child, CHILD_PROMPT, CHILD_ANSWER)
    parent = related(page)
    expect(parent.locator("dt")).to_have_text(["sub-agent of"])
    expect(parent.locator(".elsewhere")).to_have_text(BOSS[0])
    expect(parent).to_contain_text(f"call {CALL}")
    expect(parent.locator("a")).to_have_count(0)  # no link to a page this viewer cannot show


def test_the_links_are_real_links_a_keyboard_follows(page: Page, linked: Linked) -> None:
    page.goto(linked.run_url(TURNS[0][0]))
    expect_run(page, *TURNS[0])
    anchors = related(page).locator("a")
    expect(anchors).to_have_count(2)  # the next run and the session's list
    for anchor in anchors.all():
        assert anchor.get_attribute("href")
    for _ in range(10):  # past the header's links to the first link among the related runs
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.closest('nav.related') !== null"):
            break
    expect(related(page).get_by_role("link", name="next run →")).to_be_focused()
    page.keyboard.press("Enter")
    expect_run(page, *TURNS[1])


def test_runs_of_a_log_written_before_runs_had_links_show_no_links(
    page: Page, serve: Callable[[Path], Viewer], tmp_path: Path
) -> None:
    log = tmp_path / "runs.db"
    make_version_1(str(log), tmp_path)
    RunStore(log).close()  # a writer brings the schema up to date
    page.goto(serve(log).url)
    row = page.locator('tr[data-id="old"]')
    expect(row.locator(".col-status")).to_have_text("answered")
    expect(row.locator(".col-session")).to_have_text("")
    row.locator(".col-run a").click()
    expect_run(page, "old", "My order number is A1.", "Noted.")
    expect(related(page)).to_have_count(0)
