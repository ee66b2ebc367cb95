"""The tests' PostgreSQL: the server's URL (FEDGEN_TEST_POSTGRES_URL) and emptying a schema."""

from __future__ import annotations

import os

from sqlalchemy import Engine, text

from lab.models import Base

PG_BASE = os.environ.get(
    "FEDGEN_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def truncate(engine: Engine) -> None:
    """Empty every table of the lab's schema on `engine` (one TRUNCATE ... CASCADE)."""
    names = ", ".join(t.name for t in Base.metadata.sorted_tables)
    with engine.begin() as c:
        c.execute(text(f"TRUNCATE {names} CASCADE"))
