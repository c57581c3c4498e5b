"""`import` takes whole exports only: anything else, or an export cut short, is refused with a
clear message and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from steadyloop import Agent, AssistantMessage, ToolCall, tool
from steadyloop.cli import main
from steadyloop.store import RunStore
from steadyloop.testing import ScriptedModel


@tool
def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper()


@pytest.fixture
def export(tmp_path: Path) -> list[str]:
    agent = Agent(
        ScriptedModel([AssistantMessage(tool_calls=(ToolCall("a", "shout", '{"text": "hi"}'),)),
                       "done"]),
        tools=[shout], store=tmp_path / "source.db",
    )  # fmt: skip
    run_id = agent.run_sync("go").run_id
    assert agent.store is not None
    assert run_id is not None
    return list(agent.store.to_jsonl(run_id))


def import_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> tuple[int, str]:
    source = tmp_path / "export.jsonl"
    source.write_bytes(content)
    code = main(["import", str(source)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello world\n", "line 1 is not JSON"),
        (b'{"type": "event"}\n', "the first line must be the run"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
        (b"", "the first line must be the run"),
    ],
)
def test_a_file_that_is_not_an_export_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    message: str,
) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    code, err = import_file(tmp_path, capsys, content)
    assert code == 1
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_an_export_cut_short_is_refused_and_nothing_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    export: list[str],
) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    for cut in (len(export) - 1, 3, 1):
        code, err = import_file(tmp_path, capsys, "\n".join(export[:cut]).encode())
        assert code == 1
        assert "cut short" in err
    # Also cut inside a line, as a copy that stopped mid-write leaves it.
    code, err = import_file(tmp_path, capsys, "\n".join(export).encode()[:-7])
    assert code == 1
    assert RunStore(tmp_path / "home" / "runs.db").runs() == []


def test_a_whole_export_imports(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    export: list[str],
) -> None:
    monkeypatch.setenv("STEADYLOOP_HOME", str(tmp_path / "home"))
    code, _ = import_file(tmp_path, capsys, ("\n".join(export) + "\n").encode())
    assert code == 0
    (run,) = RunStore(tmp_path / "home" / "runs.db").runs()
    assert run.status == "answered"
