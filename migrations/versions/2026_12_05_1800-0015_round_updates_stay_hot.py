"""A round's update of its run row stays on the row's page: ix_runs_owner_status without
INCLUDE (stored_bytes, estimated_bytes), and the runs table's large values out of line

Each stored round updates its run row (lease, current round, accuracies, stored_bytes). With
stored_bytes in an index, none of those updates could be heap-only (HOT): every round wrote a
new copy of the whole run row elsewhere in the table and an entry in each of the table's
indexes (the spec's jsonb GIN index took ~1.4 KB a round), ~3.4 KB a round that VACUUM frees
but never gives back. And a row of ~4 KB (spec, its jsonb copy, info, segments, summary inline)
leaves no room on its page for the next version, so even a HOT update moved the row whenever
the previous version could not be pruned yet. On PostgreSQL a row over the TOAST threshold
(~2 KB) now has its JSON values moved out of line until it is under 256 bytes: an update copies
their pointers, not their bytes (the generated jsonb copy of the spec included: an unchanged
value is not written to TOAST again). The usage sums read stored_bytes from the rows (a member's
queued and running runs: a few).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05 18:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_runs_owner_status", table_name="runs")
    op.create_index("ix_runs_owner_status", "runs", ["owner_id", "status"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE runs SET (toast_tuple_target = 256)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE runs RESET (toast_tuple_target)")
    op.drop_index("ix_runs_owner_status", table_name="runs")
    op.create_index(
        "ix_runs_owner_status",
        "runs",
        ["owner_id", "status"],
        postgresql_include=["stored_bytes", "estimated_bytes"],
    )
