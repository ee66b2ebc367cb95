"""Indexes for reads at 100,000 runs: runs.spec_search (the spec as jsonb, generated) and its
GIN index for `where=` filters; runs by (sweep_id, created_at) for a sweep's runs newest first

On Postgres `spec_search` is a stored generated jsonb column (filled in for existing runs as the
table is rewritten) with a GIN jsonb_path_ops index, which `@>` containment uses. On SQLite it is
a virtual column and its index is kept empty (WHERE 0): SQLite filters by scanning the spec.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 16:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_runs_sweep_created", "runs", ["sweep_id", "created_at"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE runs ADD COLUMN spec_search JSONB GENERATED ALWAYS AS (spec) STORED"
        )
        op.execute(
            "CREATE INDEX ix_runs_spec_search ON runs USING gin (spec_search jsonb_path_ops)"
        )
        return
    # SQLite adds a generated column only as a virtual one, and with ALTER TABLE (not batch).
    op.execute("ALTER TABLE runs ADD COLUMN spec_search JSON GENERATED ALWAYS AS (spec) VIRTUAL")
    op.execute("CREATE INDEX ix_runs_spec_search ON runs (spec_search) WHERE 0")


def downgrade() -> None:
    op.drop_index("ix_runs_sweep_created", "runs")
    op.execute("DROP INDEX ix_runs_spec_search")
    op.execute("ALTER TABLE runs DROP COLUMN spec_search")
