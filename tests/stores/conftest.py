"""Every test here runs against each store: a SQLite file and a real Postgres database (the
root conftest's `store_url`, with the session's `postgres_server`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from steadyloop.store import RunLog, open_store


@pytest.fixture
def store(store_url: str) -> Iterator[RunLog]:
    """A fresh run log on the store under test, closed after the test."""
    log = open_store(store_url)
    yield log
    log.close()
