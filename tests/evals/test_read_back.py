"""An eval reads each attempt back from the log: what scorers and the report get is the run as
the log has it, whatever the text holds and however many queries the read takes."""

from __future__ import annotations

import pytest

from evals import agents
from evals.test_evaluate import CASES
from steadyloop.evals import Contains, NoToolErrors, ToolCalled, evaluate, load_report
from steadyloop.messages import AssistantMessage, ToolResult
from steadyloop.store import base, open_store


def test_each_attempt_reads_back_its_own_logged_run_whatever_its_text(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "_RUNS_PER_READ", 3)  # the runs' events take several queries
    odd = agents.ANSWERS["odd text"]
    cases = [*CASES, {"id": "odd", "input": "odd text", "expected": odd}]
    scorers = [Contains(), ToolCalled("lookup"), NoToolErrors()]

    report = evaluate("evals.agents:make_agent", cases, scorers, name="r", store=store_url,
                      repeat=2)  # fmt: skip

    assert report.attempts == 8
    assert report.pass_rate == 1.0
    store = open_store(store_url)
    try:
        for case in report.cases:
            for attempt in case.attempts:
                assert attempt.messages == store.messages(attempt.run_id)
                assert attempt.output == agents.ANSWERS[store.run(attempt.run_id).prompt]
    finally:
        store.close()
    read = report.cases[-1].attempts[1]
    assert read.run_id == "r:odd#2"
    assert read.output == odd
    _, _, answered, reply = read.messages
    assert answered == ToolResult("c-1", "lookup", odd)  # the tool's answer, as the model read it
    assert reply == AssistantMessage(odd)
    assert load_report("r", store=store_url).to_dict() == report.to_dict()
