"""Smoke check of the benchmark harness on steadyloop and the bare loop (tiny sizes, no peers).

It asserts that `bench/run.py` runs every scenario end to end and writes well-formed results;
it asserts nothing about the timings themselves (those belong in bench/README.md, not in CI).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("bench")
    process = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run.py"),
            "--quick",
            "--no-venv",
            "--no-plot",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads((out / "latest.json").read_text()), out


def spreads(value: Any) -> list[dict[str, Any]]:
    """Every median/min/max figure inside a scenario's results."""
    if isinstance(value, dict):
        if "median" in value:
            return [value]
        return [s for v in value.values() for s in spreads(v)]
    return []


def test_every_scenario_is_measured_for_both_libraries(
    results: tuple[dict[str, Any], Path],
) -> None:
    data, _ = results
    assert set(data["libraries"]) == {"bare", "steadyloop"}
    for name, entry in data["libraries"].items():
        for scenario in ("S1", "S2", "S3", "S4", "S5"):
            assert spreads(entry[scenario]), f"{name} {scenario} has no figures"
        assert {"per_turn_us_async", "per_turn_us_sync"} <= set(entry["S1"])
        assert {"wall_s_async", "wall_s_sync"} <= set(entry["S2"])
        assert {"wall_s", "cpu_ms_per_run", "peak_rss_mb"} <= set(entry["S3"])


def test_figures_are_well_formed(results: tuple[dict[str, Any], Path]) -> None:
    data, _ = results
    for entry in data["libraries"].values():
        for scenario in ("S1", "S2", "S3", "S4", "S5"):
            for figure in spreads(entry[scenario]):
                assert figure["min"] <= figure["median"] <= figure["max"]
                assert figure["n"] == len(figure["values"]) > 0
        # wall times cannot be below what the tools sleep
        assert entry["S2"]["wall_s_async"]["min"] >= 0.1
        s5 = entry["S5"]
        assert len(s5["per_turn_us"]) == s5["turns"] - 1
        assert all(cost > 0 for cost in s5["per_turn_us"])


def test_run_log_scenario_reports_its_state(results: tuple[dict[str, Any], Path]) -> None:
    s6 = results[0]["libraries"]["steadyloop"]["S6"]
    if "na" in s6:
        assert s6["na"].startswith("n/a")
    else:
        assert s6["ratio"]["median"] > 0


def test_run_log_is_measured_beside_plain_sqlite3(results: tuple[dict[str, Any], Path]) -> None:
    s6 = results[0]["libraries"]["steadyloop"]["S6"]
    assert s6["per_turn_us_bare"]["median"] > 0
    # the floor commits the log's rows, so it costs more than the bare loop alone
    assert s6["per_turn_us_sqlite_floor"]["median"] > s6["per_turn_us_bare"]["median"]
    assert s6["sqlite_floor_added"]["n"] == s6["log_added"]["n"] == s6["per_turn_us_on"]["n"]
    assert s6["log_floor_ratio"]["median"] > 0
    assert s6["ratio_batch"]["median"] > 0
    # durability="batch" beside its own floor: the same rows committed once at the run's end
    assert s6["per_turn_us_sqlite_batch_floor"]["median"] > s6["per_turn_us_bare"]["median"]
    assert s6["sqlite_batch_floor_added"]["n"] == s6["batch_log_added"]["n"]
    assert s6["batch_log_floor_ratio"]["median"] > 0
    table = (results[1] / "latest.md").read_text()
    assert "| S6 run log's added cost per turn ≤ 1.3× plain sqlite3's (floor) |" in table  # noqa: RUF001
    assert (
        '| S6 run log with durability="batch": added cost per turn ≤ 1.3× plain sqlite3\'s '  # noqa: RUF001
        "committing the same rows once at the run's end (floor) |" in table
    )


def test_tracing_is_measured_beside_the_sdk_alone(results: tuple[dict[str, Any], Path]) -> None:
    s7 = results[0]["libraries"]["steadyloop"]["S7"]
    if "na" in s7:
        pytest.skip(s7["na"])
    assert s7["per_turn_us_otel_floor"]["median"] > s7["per_turn_us_bare"]["median"] > 0
    assert s7["tracing_floor_ratio"]["median"] > 0
    assert s7["concurrent_cpu_ms_otel_floor"]["median"] > 0
    assert s7["concurrent_tracing_floor_ratio"]["median"] > 0
    table = (results[1] / "latest.md").read_text()
    assert "| S7 tracing's added cost per turn ≤ 1.2× the SDK's own (floor) |" in table  # noqa: RUF001


def test_tracing_scenario_reports_its_state(results: tuple[dict[str, Any], Path]) -> None:
    s7 = results[0]["libraries"]["steadyloop"]["S7"]
    if "na" in s7:
        assert s7["na"].startswith("n/a")
    else:
        assert s7["tracing_ratio"]["median"] > 0
        assert s7["concurrent_tracing_ratio"]["median"] > 0


def test_cli_start_is_measured_beside_each_sdk(results: tuple[dict[str, Any], Path]) -> None:
    s13 = results[0]["libraries"]["steadyloop"]["S13"]
    for provider in ("openai", "anthropic", "google"):
        for figure in ("cli_s", "sdk_s", "cli_cpu_s", "sdk_cpu_s", "wall_ratio", "cpu_ratio"):
            assert s13[f"{provider}_{figure}"]["median"] > 0, (provider, figure)
    table = (results[1] / "latest.md").read_text()
    assert "| S13 Google: CLI / SDK, wall |" in table
    assert "`steadyloop run --model anthropic:…` ≤ 1.2× the SDK's minimal script (cpu)" in table  # noqa: RUF001


@pytest.mark.skipif(shutil.which("node") is None, reason="S9 starts an MCP server on Node.js")
def test_mcp_start_up_scenario_times_both_clients(results: tuple[dict[str, Any], Path]) -> None:
    s9 = results[0]["libraries"]["steadyloop"]["S9"]
    # server-everything's tools for a client that declares elicitation, seen by both
    assert s9["tools"] == 15
    assert s9["sdk_s"]["median"] > 0
    assert s9["steadyloop_s"]["median"] > 0
    assert s9["mcp_ratio"]["median"] > 0


def test_features_scenario_measures_each_feature_on_against_off(
    results: tuple[dict[str, Any], Path],
) -> None:
    s10 = results[0]["libraries"]["steadyloop"]["S10"]
    for feature in ("output", "deps", "approvals", "approvals_async", "store", "all"):
        assert s10[f"per_turn_us_{feature}"]["median"] > 0
        assert s10[f"ratio_{feature}"]["n"] == s10["per_turn_us_none"]["n"]
    assert s10["concurrent_ratio_all"]["median"] > 0
    # a sync approver's added cost beside its floor, a thread hop, timed in the same rounds
    assert s10["approvals_hop_ratio"]["n"] == s10["thread_hop_us"]["n"] == s10["ratio_deps"]["n"]


def test_this_rounds_features_are_measured_unused_and_used(
    results: tuple[dict[str, Any], Path],
) -> None:
    data, out = results
    s14 = data["libraries"]["steadyloop"]["S14"]
    for feature in ("subagent_idle", "fallback_idle", "session_idle"):
        assert s14[f"{feature}_ratio"]["median"] > 0, feature
    if shutil.which("node") is not None:
        assert s14["mcp_idle_ratio"]["median"] > 0
    for feature in ("subagent", "subagent_direct", "limits", "fallback", "session", "google"):
        assert s14[f"{feature}_ratio"]["median"] > 0, feature
    # a ratio divides two figures timed in the same rounds
    assert s14["session_ratio"]["n"] == s14["per_turn_us_session"]["n"]
    # a sub-agent call runs a whole child run: it costs more than a tool that only answers
    assert s14["per_turn_us_subagent"]["median"] > s14["per_turn_us_child_direct"]["median"]
    assert s14["eval_ratio"]["median"] > 0
    assert s14["session_growth_own_ratio"]["median"] > 0
    assert s14["idle_modules_loaded"]["median"] == len(s14["idle_modules"]) == 0
    targets = [line for line in (out / "latest.md").read_text().splitlines() if "| S14 " in line]
    unused = [line for line in targets if "≈ 1.0× (≤ 1.05×)" in line]  # noqa: RUF001
    assert len(unused) == (4 if shutil.which("node") is not None else 3), unused
    gemini = "| S14 Gemini adapter / OpenAI Chat adapter, per turn ≤ 1.2× |"  # noqa: RUF001
    assert any(line.startswith(gemini) for line in targets)
    assert any("eval / batch of the same runs, CPU per case ≤ 1.2×" in line for line in targets)  # noqa: RUF001


def test_table_lists_figures_and_targets(results: tuple[dict[str, Any], Path]) -> None:
    table = (results[1] / "latest.md").read_text()
    assert "| figure | bare | steadyloop |" in table
    assert "S1 per turn, async tool" in table
    assert "S10 per turn, all four" in table
    assert "| target (the design's) | measured | |" in table
    assert "`import steadyloop` ≤ 1.3× `import asyncio`" in table  # noqa: RUF001


def test_every_target_is_judged_beside_its_floor(results: tuple[dict[str, Any], Path]) -> None:
    data, out = results
    table = (out / "latest.md").read_text()
    targets = [line for line in table.splitlines() if line.startswith("| S") and "≤" in line]
    for scenario in ("S1", "S2", "S3", "S4", "S5", "S6", "S10", "S13", "S14"):
        assert any(line.startswith(f"| {scenario} ") for line in targets), scenario
    for line in targets:
        assert line.endswith(("| pass |", "| **miss** |", "| n/a |", "| \u2013 |")), line
    # each ratio shows the two figures it divides, the floor named
    assert "bare" in next(line for line in targets if line.startswith("| S1 per turn"))
    assert "off " in next(line for line in targets if "S10 typed answer" in line)
    # `import steadyloop` defers its names: what loading them costs is shown too
    assert data["libraries"]["steadyloop"]["S4_agent"]["median"] > 0
    assert "| S4 `from steadyloop import Agent` |" in table


def test_misses_name_their_profile(results: tuple[dict[str, Any], Path]) -> None:
    data, out = results
    profiles = data["libraries"]["steadyloop"]["profiles"]
    expected = {"S1", "S3", "S6", "S6 batch", "S7", "S10 sync approver", "S10 async approver"}
    expected |= {"S14 eval"} | ({"S9"} if shutil.which("node") is not None else set())
    assert set(profiles) == expected
    for profile in profiles.values():
        assert profile["top"]
        assert all(entry["function"] for entry in profile["top"])
    table = (out / "latest.md").read_text()
    missed = [line[2:] for line in table.splitlines() if line.endswith("| **miss** |")]
    for name, profile in profiles.items():
        if any(target.startswith(profile["explains"]) for target in missed):
            assert f"- {name} missed; its profile by own time: `" in table
