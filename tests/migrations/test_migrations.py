"""`alembic upgrade head` works on SQLite and Postgres and matches the models (no autogenerate diff)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect

from lab.models import Base


def test_upgrade_creates_every_table(engine: Engine) -> None:
    """The migrated database holds every model table and the alembic version."""
    names = set(inspect(engine).get_table_names())
    assert {t.name for t in Base.metadata.sorted_tables} | {"alembic_version"} <= names


def test_no_autogenerate_diff(engine: Engine) -> None:
    """Autogenerate against the migrated database finds nothing to change."""
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "render_as_batch": True})
        diff = compare_metadata(ctx, Base.metadata)
    assert diff == []
