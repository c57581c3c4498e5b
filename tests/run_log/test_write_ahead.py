"""A reply is in the log before any of its calls starts, a result before the model reads it:
a process killed at either point resumes without repeating an effect or losing a result."""

from __future__ import annotations

import signal
from pathlib import Path

from run_log.run_log_helpers import calls, finish, start_run
from steadyloop import AssistantMessage, ToolResult
from steadyloop.store import RunStore


def test_a_kill_as_a_tool_starts_finds_its_reply_in_the_log(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    code, _, _ = finish(start_run(store_path, "kill-in-tool"))
    assert code == -signal.SIGKILL
    store = RunStore(store_path)
    (run,) = store.runs()
    assert run.status == "running"
    # The reply that asked for `charge` was committed before `charge` began.
    last = store.messages(run.id)[-1]
    assert isinstance(last, AssistantMessage)
    assert [c.name for c in last.tool_calls] == ["charge", "lookup"]
    store.close()

    code, out, err = finish(start_run(store_path, "resume", run.id))
    assert code == 0, err
    assert out.split(maxsplit=1)[1].strip() == "all done"
    # The model was not asked again for the calls: the resumed run answered them in place.
    resumed = RunStore(store_path).messages(run.id)
    assert sum(isinstance(m, AssistantMessage) for m in resumed) == 2
    answers = {m.name: m for m in resumed if isinstance(m, ToolResult)}
    assert answers["charge"].content.startswith("interrupted")
    assert answers["lookup"].content == "order A7 is open"


def test_a_kill_during_the_next_model_call_keeps_every_result(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    code, _, _ = finish(start_run(store_path, "kill-in-model"))
    assert code == -signal.SIGKILL
    assert sorted(calls(tmp_path)) == ["charge", "lookup"]
    run_id = RunStore(store_path).runs()[0].id

    code, _, err = finish(start_run(store_path, "resume", run_id))
    assert code == 0, err
    # Both results were committed before the model was asked: nothing ran again and the
    # finished charge is not reported as interrupted.
    assert sorted(calls(tmp_path)) == ["charge", "lookup"]
    answers = [m for m in RunStore(store_path).messages(run_id) if isinstance(m, ToolResult)]
    assert [a.content for a in answers] == ["charged 5", "order A7 is open"]
