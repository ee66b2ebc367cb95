"""Fixtures of the migration tests: an empty database of each kind, to migrate by hand."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from lab.db import make_engine
from tests.support.needs import needs
from tests.support.postgres import PG_BASE


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def bare_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database (no migration applied): a new SQLite file or a new Postgres schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'lab.db'}"
        return
    schema = f"t_mig_{uuid.uuid4().hex[:10]}"
    admin = make_engine(PG_BASE, pool_size=1)
    try:
        with admin.begin() as c:
            c.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:
        admin.dispose()
        needs(False, f"PostgreSQL at {PG_BASE} ({type(exc).__name__})")
    try:
        yield f"{PG_BASE}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as c:
            c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
