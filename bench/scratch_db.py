"""A throw-away database for a benchmark: a fresh Postgres schema (dropped after) or SQLite file."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text

from lab.config import normalize_database_url
from lab.db import make_engine
from migrations.apply import upgrade


@contextmanager
def scratch_database(url: str) -> Iterator[str]:
    """Yield a migrated database URL: a new schema of `url`'s Postgres, or a temp SQLite if url == 'sqlite'."""
    url = normalize_database_url(url)
    if url == "sqlite":
        url = f"sqlite:///{tempfile.mkdtemp()}/bench.db"
        upgrade(url)
        yield url
        return
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = make_engine(url)
    with admin.begin() as c:
        c.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        scoped = f"{url}?options=-csearch_path%3D{schema}"
        upgrade(scoped)
        yield scoped
    finally:
        with admin.begin() as c:
            c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
