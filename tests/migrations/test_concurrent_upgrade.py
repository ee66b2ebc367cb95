"""Schemas of one new database migrating at once: each gets the text-search indexes.

pg_trgm is per database, and `CREATE EXTENSION IF NOT EXISTS` in two sessions at once fails
in the second with a unique violation; migration 0013 then looks again instead of going on
without the indexes. Before that fix this test failed 1 run in 5 (a race: not every time).
"""

from __future__ import annotations

import multiprocessing as mp
import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from lab.db import make_engine
from tests.support.needs import needs
from tests.support.postgres import PG_BASE

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SCHEMAS = 4


def _upgrade(url: str) -> str | None:
    from migrations.apply import upgrade

    try:
        upgrade(url)
    except Exception as exc:  # reported to the test, which names it
        return f"{type(exc).__name__}: {exc}"[:500]
    return None


def test_schemas_migrating_at_once_all_get_the_trigram_indexes() -> None:
    # Prepare: a database of its own, so pg_trgm is not there yet (the suite's has it).
    base = make_url(PG_BASE)
    name = f"t_race_{uuid.uuid4().hex[:10]}"
    admin = make_engine(base.set(database="postgres").render_as_string(hide_password=False))
    try:
        with admin.connect() as c:
            c.execution_options(isolation_level="AUTOCOMMIT").execute(
                text(f'CREATE DATABASE "{name}"')
            )
    except Exception as exc:
        admin.dispose()
        needs(False, f"PostgreSQL at {PG_BASE} with CREATE DATABASE ({type(exc).__name__})")
    db_url = base.set(database=name).render_as_string(hide_password=False)
    engine = make_engine(db_url, pool_size=1)
    try:
        schemas = [f"s{i}" for i in range(SCHEMAS)]
        with engine.begin() as c:
            for schema in schemas:
                c.execute(text(f'CREATE SCHEMA "{schema}"'))
        urls = [f"{db_url}?options=-csearch_path%3D{schema}" for schema in schemas]
        # Execute: one process per schema (alembic's `op` is process-global)
        with mp.get_context("spawn").Pool(SCHEMAS) as pool:
            errors = [e for e in pool.map(_upgrade, urls) if e]
        # Assert
        assert errors == []
        with engine.connect() as c:
            rows = c.execute(
                text(
                    "SELECT schemaname, count(*) FROM pg_indexes"
                    " WHERE indexname IN ('ix_runs_note_trgm', 'ix_runs_tags_trgm')"
                    " GROUP BY schemaname"
                )
            ).all()
        assert dict(rows) == dict.fromkeys(schemas, 2)
    finally:
        engine.dispose()
        with admin.connect() as c:
            c.execution_options(isolation_level="AUTOCOMMIT").execute(
                text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            )
        admin.dispose()
