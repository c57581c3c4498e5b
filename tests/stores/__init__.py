"""Every store (SQLite and Postgres) held to one contract."""
