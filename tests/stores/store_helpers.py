"""Helpers for the store tests."""

from __future__ import annotations

import uuid
from typing import Any


def new_database(server: Any) -> str:
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return str(server.get_uri(name))
