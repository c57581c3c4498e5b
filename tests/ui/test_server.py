"""`steadyloop ui` as a command and a server: where it listens, what it says, what it refuses,
and the JSON API its page uses."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from steadyloop import Agent
from steadyloop.cli import main
from steadyloop.store import RunStore
from support.viewer import Viewer, fetch, off_the_loop, start_viewer
from ui.runlogs import answered_run, limit_run


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log with an answered run and a run stopped by its turn limit."""
    store = RunStore(tmp_path_factory.mktemp("log") / "runs.db")
    off_the_loop(answered_run, store)
    off_the_loop(limit_run, store)
    store.close()
    return store.path


@pytest.fixture(scope="module")
def viewer(log: Path) -> Iterator[Viewer]:
    """A viewer of `log`, shared by the tests that only read."""
    viewer = start_viewer(log)
    yield viewer
    viewer.stop()


def test_it_listens_on_loopback_and_prints_the_address(viewer: Viewer) -> None:
    assert viewer.url.startswith("http://127.0.0.1:")
    assert fetch(viewer.url).status == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_every_request_but_get_is_refused(viewer: Viewer, method: str) -> None:
    for path in ("", "runs/x", "api/runs", "api/runs/x", "api/runs/x/events", "static/app.js"):
        refused = fetch(viewer.url + path, method)
        assert refused.status == 405, path
        assert refused.headers["allow"] == "GET"
        assert b"read-only" in refused.body


def test_requests_for_another_host_name_are_refused(viewer: Viewer) -> None:
    assert fetch(viewer.url + "api/runs", headers={"Host": "attacker.example"}).status == 403
    assert fetch(viewer.url.replace("127.0.0.1", "localhost") + "api/runs").status == 200


def test_the_api_lists_runs_and_opens_one_by_the_start_of_its_id(viewer: Viewer) -> None:
    listed = fetch(viewer.url + "api/runs").json()
    assert [(run["status"], run["turns"]) for run in listed["runs"]] == [
        ("limit", 2),
        ("answered", 2),
    ]
    assert listed["statuses"] == ["answered", "limit"]
    assert listed["models"] == ["gpt-4.1-mini"]
    limited = listed["runs"][0]
    assert limited["key"] == limited["id"][:8]
    assert fetch(viewer.url + "api/runs?status=answered").json()["matching"] == 1
    assert fetch(viewer.url + "api/runs?q=NIGHTLY").json()["runs"][0]["id"] == limited["id"]

    page = fetch(viewer.url + f"api/runs/{limited['key']}").json()
    assert page["run"]["id"] == limited["id"]
    assert page["run"]["stop_reason"] == "turn_limit"
    assert [m["name"] for m in page["timeline"]["marks"] if m["kind"] == "tool"] == ["read_log"] * 2
    assert [t["turn"] for t in page["turns"]] == [1, 2]

    everything = fetch(viewer.url + f"api/runs/{limited['key']}/events").json()
    kinds = [entry["kind"] for entry in everything["entries"]]
    assert kinds[0] == "user"
    assert kinds[-2:] == ["limit", "finished"]
    after = everything["entries"][-2]["seq"]
    later = fetch(viewer.url + f"api/runs/{limited['key']}/events?after={after}").json()
    assert [entry["kind"] for entry in later["entries"]] == ["finished"]
    assert later["status"] == "limit"


def test_the_api_says_what_is_wrong_with_a_request(viewer: Viewer) -> None:
    missing = fetch(viewer.url + "api/runs/nosuchrun")
    assert missing.status == 404
    assert "no run 'nosuchrun'" in missing.json()["error"]
    assert fetch(viewer.url + "api/runs?limit=many").status == 400


def test_without_a_log_it_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ui", "--store", str(tmp_path / "none.db")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no run log at")
    assert err.count("\n") == 1
    assert not (tmp_path / "none.db").exists()


def test_without_the_ui_extra_it_names_the_install_command(
    log: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if it were not installed
    assert main(["ui", "--store", str(log)]) == 1
    err = capsys.readouterr().err
    assert "pip install 'steadyloop[ui]'" in err
    assert err.count("\n") == 1


def test_a_port_in_use_is_a_one_line_error_that_says_what_to_change(
    log: Path, viewer: Viewer
) -> None:
    port = viewer.url.rsplit(":", 1)[1].strip("/")
    second = subprocess.run(
        [sys.executable, "-m", "steadyloop", "ui", "--port", port, "--store", str(log)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert second.returncode == 1
    assert f"cannot listen on 127.0.0.1 port {port}" in second.stderr
    assert "--port" in second.stderr


def test_ctrl_c_stops_it_quietly(log: Path) -> None:
    viewer = start_viewer(log)
    viewer.process.send_signal(signal.SIGINT)
    viewer.process.wait(30)
    assert viewer.process.returncode == 0
    assert viewer.stop() == ""


def test_import_steadyloop_leaves_the_web_stack_unloaded() -> None:
    probe = "import sys, steadyloop; print(sorted({'starlette', 'uvicorn'} & set(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert loaded.stdout.strip() == "[]"


def test_a_log_written_while_the_viewer_reads_it_is_one_file_once_closed(
    serve: Callable[[Path], Viewer], tmp_path: Path
) -> None:
    path = tmp_path / "runs.db"
    RunStore(path).close()  # the viewer needs a log to open
    viewer = serve(path)

    def write_while_polled() -> str:
        agent = Agent("test", store=path)
        for number in range(20):
            agent.run_sync(f"run {number}")
            assert fetch(viewer.url + "api/runs").status == 200
        agent.close_store()
        return ""

    off_the_loop(write_while_polled)
    listed = {run["id"] for run in fetch(viewer.url + "api/runs").json()["runs"]}
    assert len(listed) == 20
    copy = tmp_path / "copy" / "runs.db"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)  # the file alone, without its -wal
    alone = sqlite3.connect(copy)
    assert {row[0] for row in alone.execute("SELECT id FROM runs")} == listed
    alone.close()
