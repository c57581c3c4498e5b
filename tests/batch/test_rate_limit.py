"""The batch rate limit: a token bucket that holds the mean rate of model calls at the cap."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from batch import agents
from batch.files import write_tasks
from steadyloop.batch import Rate, run_batch
from steadyloop.batch.ratelimit import TokenBucket
from steadyloop.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "per_second"),
    [("600/min", 10.0), ("10/s", 10.0), ("36000/hour", 10.0), ("1.5 / sec", 1.5),
     ("120/minutes", 2.0)],
)  # fmt: skip
def test_rates_are_read_per_unit_of_time(text: str, per_second: float) -> None:
    assert Rate.parse(text).per_second == pytest.approx(per_second)


@pytest.mark.parametrize("text", ["600", "0/min", "-1/s", "10/fortnight", "ten/s"])
def test_a_rate_that_is_not_a_positive_count_per_unit_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="such as '600/min'"):
        Rate.parse(text)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_lets_a_tenth_of_a_second_go_at_once_then_spaces_the_rest() -> None:
    clock = Clock()
    bucket = TokenBucket(Rate(100), clock)

    delays = [bucket.reserve() for _ in range(30)]

    assert delays[:10] == [0.0] * 10
    assert delays[10:] == pytest.approx([(k + 1) / 100 for k in range(20)])


def test_the_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(Rate(10), clock)
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(0.1)

    clock.now += 60

    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(0.1)


def test_a_batch_under_a_rate_limit_holds_its_mean_at_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATCH_TEST_TURNS", "1")
    stamps: list[float] = []

    def note(line: str) -> None:
        if line.startswith("model "):
            stamps.append(time.monotonic())

    monkeypatch.setattr(agents, "journal", note)
    tasks = write_tasks(tmp_path / "tasks.jsonl", 100)

    run_batch("batch.agents:make_agent", tasks, out=tmp_path / "o.jsonl", rate_limit="3000/min")

    assert len(stamps) == 100
    mean = (len(stamps) - 5) / (max(stamps) - min(stamps))  # 5 may go at once
    assert 0.8 * 50 <= mean <= 1.1 * 50  # at the cap, not over it (a busy machine lags)
