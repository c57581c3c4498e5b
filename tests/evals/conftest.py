"""Fixtures for the eval tests: the fake agents' counters at zero and no journal unless asked."""

from __future__ import annotations

import pytest

from evals import agents


@pytest.fixture(autouse=True)
def fake_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVAL_TEST_JOURNAL", "EVAL_TEST_SLEEP", "EVAL_TEST_BROKEN"):
        monkeypatch.delenv(name, raising=False)
    agents.CALLS.clear()


# A local Ray for the module that asks for it, as the batch tests start and stop theirs.
from batch.conftest import local_ray, ray_folder  # noqa: E402

__all__ = ["fake_agents", "local_ray", "ray_folder"]
