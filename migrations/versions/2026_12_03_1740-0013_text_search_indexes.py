"""Trigram indexes for GET /runs?q= and ?tag= on Postgres (issue 31)

`q` matches `lower(note) LIKE '%q%' OR lower(tags_csv) LIKE '%q%'` and `tag` matches
`tags_csv LIKE '%,tag,%'` (with `lower(tags_csv) LIKE` the index serves): with a leading wildcard no b-tree helps, so at 100,000 runs each
scanned the whole table (448-861 ms p95). pg_trgm's GIN indexes on exactly those expressions
serve the three LIKEs. The extension is created in `public` when missing, not in the migrating
schema, so dropping one schema never drops it under another's indexes; where it is not
available or may not be created, the indexes are skipped and the filters scan as before.
SQLite is left alone.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03 17:40:00
"""

from collections.abc import Sequence

from alembic import op
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# index name -> the indexed expression, as lab.repository's filters write it
INDEXES = {
    "ix_runs_note_trgm": "lower(note)",
    "ix_runs_tags_trgm": "lower(tags_csv)",
}


def _trgm_schema() -> str | None:
    """The schema pg_trgm is installed in, creating it in `public` if need be; None if it can't."""
    bind = op.get_bind()
    find = text(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'pg_trgm'"
    )
    schema = bind.execute(find).scalar()
    if schema is not None:
        return str(schema)
    try:
        with bind.begin_nested():  # a failed CREATE would otherwise abort the migration
            bind.execute(text("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public"))
    except DBAPIError:
        # Not installed on the server, no right to create it, or another database session
        # created it meanwhile (two schemas migrating at once: a unique violation), which the
        # second look finds.
        pass
    found = bind.execute(find).scalar()
    return None if found is None else str(found)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    schema = _trgm_schema()
    if schema is None:
        return
    for name, expression in INDEXES.items():
        op.execute(f'CREATE INDEX {name} ON runs USING gin ({expression} "{schema}".gin_trgm_ops)')


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
