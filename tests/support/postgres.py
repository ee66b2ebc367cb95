"""The tests' PostgreSQL: the server's URL (FEDGEN_TEST_POSTGRES_URL), a scratch schema, and
emptying a schema."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, text

from lab.db import make_engine
from lab.models import Base
from tests.support.needs import needs

PG_BASE = os.environ.get(
    "FEDGEN_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def truncate(engine: Engine) -> None:
    """Empty every table of the lab's schema on `engine` (one TRUNCATE ... CASCADE)."""
    names = ", ".join(t.name for t in Base.metadata.sorted_tables)
    with engine.begin() as c:
        c.execute(text(f"TRUNCATE {names} CASCADE"))


@contextmanager
def scratch_schema(prefix: str) -> Iterator[tuple[str, str]]:
    """A new empty schema named `prefix` + 10 hex digits: (its URL, its name); dropped after.

    No reachable server is `needs(False, ...)`: a skip locally, a failure in CI.
    """
    schema = f"{prefix}{uuid.uuid4().hex[:10]}"
    admin = make_engine(PG_BASE, pool_size=1)
    try:
        with admin.begin() as c:
            c.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:
        admin.dispose()
        needs(False, f"PostgreSQL at {PG_BASE} ({type(exc).__name__})")
    try:
        yield f"{PG_BASE}?options=-csearch_path%3D{schema}", schema
    finally:
        with admin.begin() as c:
            c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
