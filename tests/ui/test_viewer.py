"""The run viewer in a real browser: the list, a run's page, its timeline and transcript, a live
run growing on screen, and what browsing does (and does not do) to the log."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from steadyloop import Agent, AssistantMessage, Message, tool
from steadyloop.store import RunStore
from steadyloop.testing import FunctionModel
from steadyloop.tools import ToolSpec
from support.viewer import Viewer, off_the_loop, start_viewer
from ui.runlogs import (
    PARALLEL_TOOLS,
    answered_run,
    call,
    compacted_run,
    failed_run,
    killed_and_resumed_run,
    limit_run,
    long_run,
    parallel_run,
    reply,
    resumed_run,
)


@dataclass
class Gallery:
    """A log holding one run of each kind, and a viewer showing it."""

    log: Path
    fingerprint: tuple[int, str]  # the log file's, before the viewer opened it
    url: str
    answered: str
    parallel: str
    limit: str
    failed: str
    resumed: str
    compacted: str
    killed: str


def _fingerprint(path: Path) -> tuple[int, str]:
    return path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def gallery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gallery]:
    log = tmp_path_factory.mktemp("gallery") / "runs.db"
    store = RunStore(log)
    makers = (
        answered_run, parallel_run, limit_run, failed_run, resumed_run, compacted_run,
        killed_and_resumed_run,
    )  # fmt: skip
    runs = [off_the_loop(make, store) for make in makers]
    store.close()
    fingerprint = _fingerprint(log)
    viewer = start_viewer(log)
    yield Gallery(log, fingerprint, viewer.url, *runs)
    viewer.stop()


def test_the_list_shows_every_run_with_its_status_in_the_logs_words(
    page: Page, gallery: Gallery
) -> None:
    page.goto(gallery.url)
    expect(page.locator("table.runs tbody tr")).to_have_count(7)
    statuses = {
        gallery.answered: "answered",
        gallery.parallel: "answered",
        gallery.limit: "limit",
        gallery.failed: "error",
        gallery.resumed: "answered",
        gallery.compacted: "answered",
        gallery.killed: "answered",
    }
    for run_id, status in statuses.items():
        line = page.locator(f'tr[data-id="{run_id}"]')
        expect(line.locator(".col-run a")).to_have_text(run_id[:8])
        expect(line.locator(".col-status")).to_have_text(status)
    answered = page.locator(f'tr[data-id="{gallery.answered}"]')
    expect(answered.locator(".col-model")).to_have_text("gpt-4.1-mini")
    expect(answered.locator(".col-turns")).to_have_text("2")
    expect(answered.locator(".col-tokens")).to_have_text("1,777")  # 812+31 and 870+64
    expect(answered.locator(".col-cost")).to_have_text("—")  # the fakes have no price
    expect(answered.locator(".col-prompt")).to_have_text("Which refunds are still open?")


def test_the_list_filters_by_status_and_model_and_searches_prompts(
    page: Page, gallery: Gallery
) -> None:
    page.goto(gallery.url)
    rows = page.locator("table.runs tbody tr")
    expect(rows).to_have_count(7)

    page.select_option("select[name=status]", "limit")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", gallery.limit)

    page.select_option("select[name=status]", "")
    page.select_option("select[name=model]", "claude-sonnet-4-5")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", gallery.parallel)

    page.select_option("select[name=model]", "")
    page.fill("input[name=q]", "BILLING")
    expect(rows).to_have_count(2)
    expect(page.locator(f'tr[data-id="{gallery.failed}"]')).to_be_visible()
    expect(page.locator(f'tr[data-id="{gallery.resumed}"]')).to_be_visible()


def test_a_run_opens_from_the_list_by_its_first_8_id_characters(
    page: Page, gallery: Gallery
) -> None:
    page.goto(gallery.url)
    page.get_by_role("link", name=gallery.answered[:8], exact=True).click()
    expect(page).to_have_url(f"{gallery.url}runs/{gallery.answered[:8]}")
    transcript = page.locator("#transcript")
    expect(transcript.locator(".entry.user")).to_contain_text("Which refunds are still open?")
    expect(transcript.locator(".entry.reply").last).to_contain_text(
        "Two refunds are open: T-101 and T-103."
    )
    expect(page.locator(".run-head .status")).to_have_text("answered")


def test_the_timeline_has_one_mark_per_call_named_after_its_tool_or_model(
    page: Page, gallery: Gallery
) -> None:
    page.goto(f"{gallery.url}runs/{gallery.parallel[:8]}")
    tools = page.locator("svg.timeline .mark.tool")
    expect(tools).to_have_count(3)
    named = sorted(tools.nth(i).locator("title").text_content() or "" for i in range(3))
    assert [title.split(" · ")[0] for title in named] == sorted(PARALLEL_TOOLS)
    models = page.locator("svg.timeline .mark.model")
    expect(models).to_have_count(2)
    for i in range(2):
        assert (models.nth(i).get_attribute("aria-label") or "").startswith("claude-sonnet-4-5")


def test_parallel_calls_are_drawn_in_separate_lanes(page: Page, gallery: Gallery) -> None:
    page.goto(f"{gallery.url}runs/{gallery.parallel[:8]}")
    tools = page.locator("svg.timeline .mark.tool rect")
    expect(tools).to_have_count(3)
    tops = set()
    for i in range(3):
        box = tools.nth(i).bounding_box()
        assert box is not None
        tops.add(box["y"])
    model = page.locator("svg.timeline .mark.model rect").first.bounding_box()
    assert model is not None
    assert len(tops) == 3
    assert model["y"] not in tops


def test_the_transcript_shows_arguments_errors_truncation_durations_and_the_stop(
    page: Page, gallery: Gallery
) -> None:
    page.goto(f"{gallery.url}runs/{gallery.limit[:8]}")
    tools = page.locator("#transcript .entry.tool")
    expect(tools).to_have_count(2)
    failed, cut = tools.nth(0), tools.nth(1)
    expect(failed.locator(".args")).to_have_text('{"lines": 500}')
    expect(failed.locator(".flag.error")).to_have_text("error")
    expect(failed).to_contain_text("at most 100 lines")
    expect(failed.locator(".meta")).to_contain_text(" ms")
    expect(cut.locator(".marker.truncated")).to_contain_text("1,510 characters")
    expect(cut.locator(".result")).to_contain_text("characters omitted")
    expect(page.locator("#transcript .entry.limit")).to_contain_text("stopped: turn limit reached")
    expect(page.locator("svg.timeline .mark.limit")).to_have_count(1)
    expect(page.locator(".run-head .status")).to_have_text("limit")


def test_a_failed_run_shows_its_error_and_a_resumed_run_is_marked(
    page: Page, gallery: Gallery
) -> None:
    page.goto(f"{gallery.url}runs/{gallery.failed[:8]}")
    expect(page.locator(".run-head .status")).to_have_text("error")
    expect(page.locator(".run-error")).to_contain_text("the API key was revoked")

    page.goto(f"{gallery.url}runs/{gallery.resumed[:8]}")
    expect(page.locator("#transcript .entry.resumed")).to_have_count(1)
    expect(page.locator("#transcript .entry.reply").last).to_contain_text("Billing is up.")
    # The call the failure cut short, and the one made again after the resume.
    models = page.locator("svg.timeline .mark.model")
    expect(models).to_have_count(3)
    expect(models.nth(1)).to_have_attribute("aria-label", _ending("no reply"))

    # A process killed in the middle of a call: the resume answers the call as interrupted.
    page.goto(f"{gallery.url}runs/{gallery.killed[:8]}")
    entries = page.locator("#transcript .entry")
    expect(entries.nth(3)).to_have_attribute("data-kind", "resumed")
    expect(entries.nth(4).locator(".result")).to_contain_text("interrupted")


def test_compactions_show_their_summaries_and_marks(page: Page, gallery: Gallery) -> None:
    page.goto(f"{gallery.url}runs/{gallery.compacted[:8]}")
    summaries = page.locator("#transcript .entry.summary")
    expect(summaries).to_have_count(3)
    expect(summaries.first).to_contain_text("Pages 0-1: disk full.")
    expect(summaries.first.locator(".name")).to_have_text("summary of 2 earlier messages")
    expect(page.locator("#transcript .entry.compacted").first).to_contain_text(
        re.compile(r"2 earlier messages summarised · context [\d,]+ → [\d,]+ tokens")
    )
    expect(page.locator("svg.timeline .mark.compacted")).to_have_count(3)
    expect(page.locator("svg.timeline .mark.compacted title").first).to_have_text("compaction")


def _ending(words: str) -> re.Pattern[str]:
    return re.compile(f"{re.escape(words)}$")


def test_every_request_the_page_makes_goes_to_the_viewer_on_loopback(
    page: Page, gallery: Gallery
) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(gallery.url)
    page.fill("input[name=q]", "refund")
    expect(page.locator("table.runs tbody tr")).to_have_count(2)
    for run_id in (gallery.parallel, gallery.limit, gallery.resumed):
        page.goto(f"{gallery.url}runs/{run_id[:8]}")
        expect(page.locator("#transcript .entry").first).to_be_visible()
    kinds = {urlsplit(url).path.split("/")[1] for url in requested}
    assert {"api", "static", "runs"} <= kinds
    assert {urlsplit(url).hostname for url in requested} == {"127.0.0.1"}


def test_browsing_leaves_the_log_file_as_it_was(page: Page, gallery: Gallery) -> None:
    page.goto(gallery.url)
    page.select_option("select[name=status]", "answered")
    expect(page.locator("table.runs tbody tr")).to_have_count(5)
    for run_id in (gallery.answered, gallery.parallel, gallery.limit, gallery.failed):
        page.goto(f"{gallery.url}runs/{run_id[:8]}")
        expect(page.locator("#transcript .entry").first).to_be_visible()
    assert _fingerprint(gallery.log) == gallery.fingerprint


def test_a_live_run_grows_on_the_page_as_it_is_logged(
    page: Page, tmp_path: Path, serve: Callable[[Path], Viewer]
) -> None:
    store = RunStore(tmp_path / "runs.db")
    go = threading.Event()

    @tool
    def wait_for_approval(ticket: str) -> str:
        """Blocks until the ticket is approved; returns who approved it."""
        go.wait(60)
        return f"{ticket} approved by Ana"

    def decide(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AssistantMessage:
        if len(messages) == 1:
            return reply(call("w", "wait_for_approval", ticket="T-101"))
        return reply(text="T-101 was approved by Ana.")

    agent = Agent(FunctionModel(decide, name="gpt-4.1-mini"), tools=[wait_for_approval],
                  store=store)  # fmt: skip
    runner = threading.Thread(target=agent.run_sync, args=("Get T-101 approved.",))
    viewer = serve(store.path)
    runner.start()
    try:
        page.goto(viewer.url)
        expect(page.locator("tbody .col-status")).to_have_text("running")
        expect(page.locator("tbody .col-turns")).to_have_text("1")  # added up while it runs
        page.locator("tbody .col-run a").click()
        expect(page.locator(".run-head .status")).to_have_text("running")
        expect(page.locator("#transcript .entry.reply")).to_contain_text("wait_for_approval")
        waiting = page.locator("svg.timeline .mark.tool")
        expect(waiting).to_have_attribute("aria-label", _ending("running"))
        expect(page.locator("#live")).to_be_visible()
    finally:
        go.set()
        runner.join(30)
    expect(page.locator("#transcript .entry.tool .result")).to_have_text("T-101 approved by Ana")
    expect(page.locator("#transcript .entry.reply").last).to_contain_text(
        "T-101 was approved by Ana."
    )
    expect(page.locator(".run-head .status")).to_have_text("answered")
    expect(page.locator("svg.timeline .mark.tool")).not_to_have_class(_ending("open"))
    expect(page.locator("#live")).to_be_hidden()
    store.close()


def test_a_run_of_1000_turns_loads(
    page: Page, tmp_path: Path, serve: Callable[[Path], Viewer], capsys: pytest.CaptureFixture[str]
) -> None:
    store = RunStore(tmp_path / "runs.db")
    run_id = off_the_loop(long_run, store, 1000)
    store.close()
    viewer = serve(store.path)
    started = time.perf_counter()
    page.goto(f"{viewer.url}runs/{run_id[:8]}")
    expect(page.locator("#transcript .entry.user")).to_be_visible()
    shown = time.perf_counter() - started  # timeline, charts and the start of the transcript
    expect(page.locator("#transcript .entry.finished")).to_have_count(1, timeout=120_000)
    loaded = time.perf_counter() - started
    expect(page.locator("svg.timeline .mark.tool")).to_have_count(1000)
    expect(page.locator("svg.timeline .mark.model")).to_have_count(1001)
    expect(page.locator("#transcript .entry.tool")).to_have_count(1000)
    with capsys.disabled():
        print(f"\n1,000-turn run: first screen in {shown:.2f} s, whole page in {loaded:.2f} s")
