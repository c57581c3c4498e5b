"""`evaluate` with the fake agents on the real stores: scores, repeats, resuming from the log,
judges that are logged runs reused while their prompt is unchanged, errors that stay in their
case, and the report kept in the log."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evals import agents
from evals.agents import judge_reply
from steadyloop.errors import ConfigError
from steadyloop.evals import (
    Attempt,
    Case,
    Contains,
    Dataset,
    ExactMatch,
    JSONEqual,
    Judge,
    MaxCost,
    MaxTokens,
    MaxTurns,
    NoToolErrors,
    Regex,
    ToolCalled,
    compare,
    evaluate,
    load_report,
    scorer,
)
from steadyloop.store import open_store
from steadyloop.testing import FunctionModel

CASES: list[dict[str, Any]] = [
    {"id": "fr", "input": "capital of France", "expected": "Paris"},
    {"id": "es", "input": "capital of Spain", "expected": "Madrid"},
    {"id": 3, "input": "two plus two", "expected": "4", "metadata": {"topic": "math"}},
]


def agent_calls() -> int:
    return sum(n for key, n in agents.CALLS.items() if key.startswith(("model", "plain")))


def test_an_eval_scores_each_attempt_from_its_logged_run_and_keeps_the_report(
    store_url: str,
) -> None:
    judge = Judge(FunctionModel(judge_reply), "Names the expected answer.")
    scorers = [ExactMatch(), ToolCalled("lookup", args={"query": re.compile("capital")}),
               MaxTurns(2), NoToolErrors(), judge]  # fmt: skip

    report = evaluate("evals.agents:make_agent", CASES, scorers, name="v1", store=store_url)

    assert [case.id for case in report.cases] == ["fr", "es", "3"]
    assert report.scores == {"exact_match": 1.0, "tool_called:lookup": 2 / 3, "max_turns": 1.0,
                             "no_tool_errors": 1.0, "judge": 1.0}  # fmt: skip
    three = report.cases[2]
    assert three.passed is False
    assert "lookup was called with" in three.attempts[0].scores["tool_called:lookup"].reason
    assert report.pass_rate == pytest.approx(2 / 3)
    assert report.turns == 2.0
    attempt = report.cases[0].attempts[0]
    assert attempt.run_id == "v1:fr"
    assert attempt.output == "Paris"
    judged = attempt.scores["judge"]
    store = open_store(store_url)
    try:
        judge_run = store.run(str(judged.run_id))
        assert "Names the expected answer." in judge_run.prompt
        assert "The agent's answer:\nParis" in judge_run.prompt
        assert store.run("v1:fr").status == "answered"
    finally:
        store.close()

    saved = load_report("v1", store=store_url)
    assert saved.to_dict() == report.to_dict()


def test_a_finished_eval_run_again_makes_no_model_call_and_gives_the_same_report(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs.db"
    scorers = [Contains(), agents.judge]
    first = evaluate("evals.agents:make_agent", CASES, scorers, name="e", store=store, repeat=2)
    assert agents.CALLS["judge"] == 3  # two attempts with one answer share one judgement
    agents.CALLS.clear()

    again = evaluate("evals.agents:make_agent", CASES, scorers, name="e", store=store, repeat=2)

    assert agents.CALLS == {}
    assert again.to_dict() == first.to_dict()


def test_a_changed_expected_answer_is_rescored_and_judged_again_without_running_the_agent(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs.db"
    evaluate("evals.agents:make_agent", CASES, [ExactMatch(), agents.judge], name="e", store=store)
    agents.CALLS.clear()
    changed = [{**CASES[0], "expected": "Lyon"}, *CASES[1:]]

    report = evaluate(
        "evals.agents:make_agent", changed, [ExactMatch(), agents.judge], name="e", store=store
    )

    assert agent_calls() == 0
    assert agents.CALLS["judge"] == 1  # only the changed case's prompt is new
    fr = report.cases[0].attempts[0].scores
    assert (fr["exact_match"].passed, fr["judge"].passed) == (False, False)
    assert fr["judge"].reason == "wrong"


def test_repeat_gives_a_pass_rate_per_case_and_raising_it_adds_only_the_new_attempts(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs.db"

    @scorer(name="every_other")
    def every_other(case: Case, attempt: Attempt) -> bool:
        return attempt.repeat % 2 == 1

    evaluate("evals.agents:make_agent", CASES[:1], [every_other], name="r", store=store)
    agents.CALLS.clear()

    report = evaluate("evals.agents:make_agent", CASES[:1], [every_other], name="r",
                      store=store, repeat=4)  # fmt: skip

    assert [a.run_id for a in report.cases[0].attempts] == ["r:fr", "r:fr#2", "r:fr#3", "r:fr#4"]
    assert report.cases[0].pass_rate == 0.5
    assert agents.CALLS["model capital of France"] == 3 * 2  # three new attempts of two turns


def test_a_scorer_that_raises_or_returns_nonsense_scores_an_error_and_the_eval_goes_on(
    tmp_path: Path,
) -> None:
    def divides(case: Case, attempt: Any) -> float:
        return 1 / 0 if case.id == "fr" else 1.0

    def nonsense(case: Case, attempt: Any) -> Any:
        return {"fr": float("nan"), "es": 1.5, "3": "yes"}[case.id]

    report = evaluate("evals.agents:make_agent", CASES, [divides, nonsense, ExactMatch()],
                      name="x", store=tmp_path / "runs.db")  # fmt: skip

    fr = report.cases[0].attempts[0].scores
    assert fr["divides"].error == "ZeroDivisionError: division by zero"
    assert (fr["divides"].value, fr["divides"].passed) == (0.0, False)
    assert fr["exact_match"].passed
    assert [c.attempts[0].scores["nonsense"].error is not None for c in report.cases] == [True] * 3
    assert report.cases[1].attempts[0].scores["divides"].passed
    assert report.errors == 4


def test_scorers_without_what_they_need_score_errors_not_passes(tmp_path: Path) -> None:
    cases = [{"id": "a", "input": "refunds"}]

    report = evaluate(
        "evals.agents:make_agent", cases,
        [ExactMatch(), Contains(), JSONEqual({"open": ["T-101", "T-103"], "count": 3}),
         Regex(r"T-10\d"), MaxCost(1.0), MaxTokens(10_000)],
        name="n", store=tmp_path / "runs.db",
    )  # fmt: skip

    scores = report.cases[0].attempts[0].scores
    assert scores["exact_match"].error == "case a has no expected answer for exact_match"
    assert scores["contains"].error is not None
    assert scores["json_equal"].value == 0.5
    assert "count" in scores["json_equal"].reason
    assert scores["regex"].passed
    assert scores["max_cost"].error is not None  # the fake model has no price
    assert scores["max_tokens"].error is not None  # nor token counts


def test_a_tool_error_is_named_by_no_tool_errors(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("EVAL_TEST_BROKEN", "capital of Spain")

    report = evaluate("evals.agents:make_agent", CASES[:2], [NoToolErrors()], name="t",
                      store=tmp_path / "runs.db")  # fmt: skip

    es = report.cases[1].attempts[0].scores["no_tool_errors"]
    assert not es.passed
    assert "nothing known about capital of Spain" in es.reason
    assert report.cases[0].passed


def test_compare_names_the_cases_fixed_and_broken(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    plain = evaluate("evals.agents:make_plain_agent", CASES, [ExactMatch()], name="a", store=store)
    tool = evaluate("evals.agents:make_agent", CASES, [ExactMatch()], name="b", store=store)

    diff = compare(load_report("a", store=store), tool)

    assert diff.fixed == ["es", "3"]
    assert diff.broken == []
    assert compare(tool, plain).broken == ["es", "3"]
    assert diff.to_dict()["changed"][0]["other"]["pass_rate"] == 1.0
    assert "fixed: es" in diff.render()


def test_bad_lines_are_reported_and_skipped_and_duplicates_refused(tmp_path: Path) -> None:
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    lines = [
        '{"id": "ok", "input": ["capital of France", {"type": "image", "path": "pic.png"}]}',
        "",
        "not json",
        '{"id": "typo", "input": "x", "expcted": "y"}',
        '{"id": "gone", "input": [{"type": "image", "path": "missing.png"}]}',
        '{"input": "no id"}',
    ]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")

    dataset = Dataset.from_jsonl(tmp_path / "cases.jsonl")

    assert [c.id for c in dataset.cases] == ["ok"]
    assert dataset.cases[0].text == "capital of France"
    assert [b.line for b in dataset.bad] == [3, 4, 5, 6]
    assert "unknown key 'expcted'" in str(dataset.bad[1])
    assert str(dataset.bad[2]).startswith("line 5: image not found")
    report = evaluate("evals.agents:make_agent", dataset, [ExactMatch("Paris")], name="img",
                      store=tmp_path / "runs.db")  # fmt: skip
    assert report.passed == 1
    assert [b.line for b in report.bad] == [3, 4, 5, 6]
    with pytest.raises(ConfigError, match=r"duplicate case ids: 'a' on items 1, 3"):
        Dataset([{"id": "a", "input": "x"}, {"id": "b", "input": "y"}, {"id": "a", "input": "z"}])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "a/b"}, "an eval's name is 1 to 100 letters"),
        ({"name": "ok", "repeat": 0}, "repeat must be a whole number"),
        ({"name": "ok", "scorers": [ExactMatch(), ExactMatch()]}, "two scorers are named"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    scorers = options.pop("scorers", [])
    with pytest.raises(ConfigError, match=message):
        evaluate("evals.agents:make_agent", CASES, scorers, store=tmp_path / "r.db", **options)
    assert agent_calls() == 0


def test_an_eval_remembers_its_agent_and_its_inputs(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    evaluate("evals.agents:make_agent", CASES, name="m", store=store)

    with pytest.raises(ConfigError, match="give this eval another name"):
        evaluate("evals.agents:make_plain_agent", CASES, name="m", store=store)
    changed = [{**CASES[0], "input": "capital of Italy"}]
    with pytest.raises(ConfigError, match="asks something else"):
        evaluate("evals.agents:make_agent", changed, name="m", store=store)
    with pytest.raises(ConfigError, match="no eval 'nope'"):
        load_report("nope", store=store)


def test_a_judge_run_that_failed_scores_an_error_and_is_not_asked_again(tmp_path: Path) -> None:
    asked = {"n": 0}

    async def broken(messages: Any, tools: Any) -> Any:
        asked["n"] += 1
        raise RuntimeError("the judge is down")

    judge = Judge(FunctionModel(broken), "anything")
    store = tmp_path / "runs.db"
    first = evaluate("evals.agents:make_agent", CASES[:1], [judge], name="j", store=store)
    score = first.cases[0].attempts[0].scores["judge"]
    assert score.error is not None
    assert "the judge is down" in score.error
    assert score.run_id is not None
    assert score.run_id.startswith("j:judge:")
    seen = asked["n"]

    again = evaluate("evals.agents:make_agent", CASES[:1], [judge], name="j", store=store)

    assert asked["n"] == seen
    assert again.cases[0].attempts[0].scores["judge"].run_id == score.run_id


def test_the_report_json_has_the_documented_shape(tmp_path: Path) -> None:
    report = evaluate("evals.agents:make_agent", CASES[:1], [ExactMatch()], name="s",
                      store=tmp_path / "r.db")  # fmt: skip

    data = json.loads(report.to_json())

    assert set(data) == {"name", "agent", "dataset", "repeat", "scorers", "summary", "cases", "bad"}
    assert set(data["summary"]) == {
        "cases", "attempts", "passed", "pass_rate", "scores", "errors", "statuses", "unfinished",
        "cost_usd", "tokens", "turns", "latency_p50", "latency_p95",
    }  # fmt: skip
    attempt = data["cases"][0]["attempts"][0]
    assert attempt["scores"]["exact_match"] == {
        "value": 1.0, "passed": True, "reason": "", "error": None, "run_id": None,
    }  # fmt: skip
    assert data["agent"] == "evals.agents:make_agent"


def test_a_factory_that_fails_is_a_config_error_and_no_report_is_saved(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"

    with pytest.raises(ConfigError, match=r"evals\.agents:missing does not exist"):
        evaluate("evals.agents:missing", CASES, name="f", store=store)

    with pytest.raises(ConfigError, match="no eval 'f'"):
        load_report("f", store=store)


async def test_evaluate_inside_a_running_event_loop_says_to_use_a_thread(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="call it from a thread"):
        evaluate("evals.agents:make_agent", CASES, name="l", store=tmp_path / "runs.db")
