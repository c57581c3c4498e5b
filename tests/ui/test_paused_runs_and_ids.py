"""The viewer on runs paused for approval and resumed (a page following one sees every entry,
in the order things happened, each result once), on runs with any id, and on prompts with
images: through its JSON API, and once in the browser."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from steadyloop import Agent, Approve, Image, ToolResult, UserMessage, tool
from steadyloop.events import MessageAdded, ModelRequestStarted, ToolCallFinished
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel
from support.samples import PNG
from support.viewer import Viewer, fetch, off_the_loop, start_viewer
from ui.runlogs import call, reply

HOSTILE_IDS = ("tenant/42", "../../etc/passwd", "a/b", "<script>x</script>", "x/events", "50%")


@tool
def send_email(to: str) -> str:
    """Sends an email."""
    return f"sent to {to}"


@tool(approve=True)
def wire_money(amount: int) -> str:
    """Wires money; needs a person's approval."""
    return f"wired {amount} EUR"


def paused_run(store: RunStore, run_id: str = "pay-1") -> str:
    """A run whose reply sends an email (ungated) and wires money (gated): it pauses. Its
    prompt has an image."""
    model = ScriptedModel(
        [reply(call("c_mail", "send_email", to="ana@example.com"), call("c_wire", "wire_money",
                                                                        amount=1))],
        name="gpt-4.1-mini",
    )  # fmt: skip
    paused = Agent(model, tools=[send_email, wire_money], store=store).run_sync(
        ["Pay Ana 1 EUR and tell her.", Image.from_bytes(PNG)], run_id=run_id
    )
    assert paused.stop_reason == "approval"
    return run_id


def approve(store: RunStore, run_id: str) -> None:
    """Resumes the paused run with the wire approved; it then answers."""
    model = ScriptedModel([reply(text="Paid and told.")], name="gpt-4.1-mini")
    agent = Agent(model, tools=[send_email, wire_money], store=store)
    asyncio.run(agent.resume(run_id, decisions={"c_wire": Approve()}))


def results(entries: list[dict[str, Any]]) -> list[str]:
    return [e["content"] for e in entries if e["kind"] == "tool"]


@pytest.fixture
def paused(tmp_path: Path) -> Iterator[tuple[RunStore, Viewer]]:
    """A log holding a paused run, and a viewer of it."""
    store = RunStore(tmp_path / "runs.db")
    paused_run(store)
    viewer = start_viewer(store.path)
    yield store, viewer
    viewer.stop()
    store.close()


def test_a_follower_of_a_paused_run_gets_the_approved_calls_result_once_resumed(
    paused: tuple[RunStore, Viewer],
) -> None:
    store, viewer = paused
    events = f"{viewer.url}api/runs/pay-1/events"
    before = fetch(events).json()
    assert before["status"] == "paused"
    assert results(before["entries"]).count("sent to ana@example.com") == 1
    assert "wired 1 EUR" not in results(before["entries"])

    approve(store, "pay-1")
    missing = ",".join(map(str, before["missing"]))
    after = fetch(f"{events}?after={before['last_seq']}&missing={missing}").json()
    assert after["status"] == "answered"
    assert after["missing"] == []
    kinds = [e["kind"] for e in after["entries"]]
    # What the resume logged, in the order it happened: the decision, then what it let run.
    assert kinds[:3] == ["resumed", "event", "tool"]
    assert after["entries"][1]["data"]["decision"] == "approved"
    assert results(after["entries"]) == ["wired 1 EUR"]  # the email's result is not repeated
    assert kinds[-1] == "finished"

    # A page opened now shows the same entries in the same order.
    whole = fetch(events).json()["entries"]
    assert [e["seq"] for e in whole] == [e["seq"] for e in before["entries"] + after["entries"]]


def test_a_follower_gets_an_answer_a_resume_logs_below_the_last_number_it_saw(
    tmp_path: Path,
) -> None:
    """A process killed while the first of two calls ran, after the second had finished: the
    first call's answer has a slot below the last event, which the resume fills."""
    reads: list[str] = []

    @tool(idempotent=True)
    def read_ledger() -> str:
        """Reads the ledger."""
        reads.append("ledger")
        return "ledger: 3 entries"

    @tool
    def ping() -> str:
        """Answers at once."""
        return "pong"

    store = RunStore(tmp_path / "runs.db")
    run_id = store.start_run(model="gpt-4.1-mini", prompt="go", history=(), config={})
    record = store.recorder(run_id)
    both = reply(call("c_read", "read_ledger"), call("c_ping", "ping"))
    record(MessageAdded(0, UserMessage("go")))
    record(ModelRequestStarted(1, 10, 100, 1))
    record(MessageAdded(1, both))
    record(ToolCallFinished(both.tool_calls[1], ToolResult("c_ping", "ping", "pong"), "pong",
                            0.01, 1))  # fmt: skip
    store.release(run_id)  # as the operating system does when the process dies
    viewer = start_viewer(store.path)
    try:
        events = f"{viewer.url}api/runs/{run_id}/events"
        before = fetch(events).json()
        assert results(before["entries"]) == ["pong"]
        assert before["missing"] == [before["last_seq"] - 1]  # the slot of the call in flight

        agent = Agent(ScriptedModel([reply(text="3 entries.")]), tools=[read_ledger, ping],
                      store=store)  # fmt: skip
        asyncio.run(agent.resume(run_id))
        assert reads == ["ledger"]
        missing = ",".join(map(str, before["missing"]))
        after = fetch(f"{events}?after={before['last_seq']}&missing={missing}").json()
    finally:
        viewer.stop()
        store.close()
    assert results(after["entries"]) == ["ledger: 3 entries"]
    assert [e["kind"] for e in after["entries"]][-2:] == ["reply", "finished"]


def test_every_run_id_can_be_opened_by_its_encoded_path(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    for run_id in HOSTILE_IDS:
        Agent(ScriptedModel([f"answer of {run_id}"]), store=store).run_sync("hi", run_id=run_id)
    store.close()
    viewer = start_viewer(store.path)
    try:
        listed = fetch(viewer.url + "api/runs").json()
        assert {run["key"] for run in listed["runs"]} == set(HOSTILE_IDS)
        for run_id in HOSTILE_IDS:
            path = quote(run_id, safe="")
            page = fetch(f"{viewer.url}runs/{path}")
            assert page.status == 200
            assert page.headers["content-security-policy"].startswith("default-src 'self'")
            assert fetch(f"{viewer.url}api/runs/{path}").json()["run"]["id"] == run_id
            entries = fetch(f"{viewer.url}api/runs/{path}/events").json()["entries"]
            assert entries[-2]["text"] == f"answer of {run_id}"
        # Unencoded, a "/" is a path separator: "x/events" is the events of run "x".
        assert fetch(f"{viewer.url}api/runs/a/b").status == 404
        assert fetch(f"{viewer.url}api/runs/x/events").status == 404
    finally:
        viewer.stop()


@pytest.mark.parametrize(
    "path",
    [
        "static/..%2F..%2F..%2F..%2Fetc%2Fpasswd",
        "static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "static/..%2Fapp.py",
        "api/runs/..%2F..%2Fetc%2Fpasswd",
        "runs/..%2F..%2Fetc%2Fpasswd",
    ],
)
def test_no_path_reaches_a_file_outside_the_static_folder(
    paused: tuple[RunStore, Viewer], path: str
) -> None:
    answer = fetch(paused[1].url + path)
    assert b"root:" not in answer.body
    assert b"make_app" not in answer.body
    assert answer.status in (200, 404)  # a run page's shell, or nothing
    if answer.status == 200:
        assert answer.headers["content-type"].startswith("text/html")


def test_a_prompts_images_are_marked_on_its_user_entry(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    Agent(ScriptedModel(["Paid."]), store=store).run_sync(
        ["Is this paid?", Image.from_bytes(PNG)], run_id="receipt"
    )
    store.close()
    viewer = start_viewer(store.path)
    try:
        user = fetch(viewer.url + "api/runs/receipt/events").json()["entries"][0]
    finally:
        viewer.stop()
    assert user["kind"] == "user"
    assert user["text"] == "Is this paid?"
    assert user["attachments"] == [f"image: image/png, {len(PNG)} bytes"]


def test_a_paused_runs_page_shows_the_resume_as_it_happens(
    page: Page, tmp_path: Path, serve: Callable[[Path], Viewer]
) -> None:
    store = RunStore(tmp_path / "runs.db")
    run_id = off_the_loop(paused_run, store, "tenant/7")
    viewer = serve(store.path)
    page.goto(viewer.url)
    page.locator("tbody .col-run a").click()  # the link encodes the "/" of the id
    expect(page.locator(".run-head .status")).to_have_text("paused")
    expect(page.locator("#transcript .entry.user .attachment")).to_have_text(
        f"[image: image/png, {len(PNG)} bytes]"
    )
    expect(page.locator("#transcript .entry.tool").first).to_contain_text("sent to ana@")

    resumed = threading.Thread(target=approve, args=(store, run_id))
    resumed.start()
    resumed.join(60)
    expect(page.locator(".run-head .status")).to_have_text("answered")
    expect(page.locator("#transcript .entry.reply").last).to_contain_text("Paid and told.")
    shown = page.locator("#transcript .entry").evaluate_all(
        "entries => entries.map(e => [e.dataset.kind, e.textContent])"
    )
    store.close()
    kinds = [kind for kind, _ in shown]
    texts = [text for _, text in shown]
    assert sum("sent to ana@example.com" in text for text in texts) == 1
    assert sum("wired 1 EUR" in text for text in texts) == 1
    mark = kinds.index("resumed")
    assert "approved" in texts[mark + 1]  # the decision, then what it let run
    assert "wired 1 EUR" in texts[mark + 2]
    assert kinds[mark + 2 :] == ["tool", "turn", "reply", "finished"]
