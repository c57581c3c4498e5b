"""An eval on a local Ray: the runs happen on the workers, the scoring (a judge included) here,
from the log; run again, it asks no model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals import agents
from steadyloop.batch import RayEngine
from steadyloop.evals import ExactMatch, ToolCalled, evaluate

CASES = [{"id": f"c{i}", "input": f"case {i}", "expected": f"CASE {i}"} for i in range(40)]


def test_an_eval_on_ray_is_scored_here_from_the_log(tmp_path: Path, local_ray: Any) -> None:
    store = tmp_path / "runs.db"
    engine = RayEngine(workers=2, per_worker=8, chunk=5)
    scorers = [ExactMatch(), ToolCalled("lookup"), agents.judge]

    report = evaluate("evals.agents:make_agent", CASES, scorers, name="ray", store=store,
                      engine=engine)  # fmt: skip

    assert report.attempts == 40
    assert report.unfinished == 0
    assert report.pass_rate == 1.0
    assert not any(key.startswith("model") for key in agents.CALLS)  # the agents ran on Ray
    assert agents.CALLS["judge"] == 40  # the judge, here
    agents.CALLS.clear()

    again = evaluate("evals.agents:make_agent", CASES, scorers, name="ray", store=store,
                     engine=engine)  # fmt: skip

    assert agents.CALLS == {}
    assert again.to_dict() == report.to_dict()
