"""Member quotas: what each run stores (runs.stored_bytes), its footprint estimated at
submission (runs.estimated_bytes), and a member's own quota (users.quota_bytes)

stored_bytes of existing runs is filled in from what they hold: their checkpoints' sizes and
their rounds 0..current_round at the per-round bytes of fedgen.sizes.round_bytes as they were
when this revision was written (300 + 18 per user: rounds packed by 0010, which runs first),
so a lab upgraded mid-year starts with its members' real usage.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 16:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# fedgen.sizes.ROUND_BYTES_BASE / ROUND_BYTES_PER_USER at this revision (rounds packed by 0010):
# a migration must not change what it does when the module's figures change later.
ROUND_BYTES_BASE = 400
ROUND_BYTES_PER_USER = 18
DEFAULT_USERS = 20  # ExperimentSpec's partition.num_users default, for a spec without it


def _num_users_sql(dialect: str) -> str:
    if dialect == "postgresql":
        return "CAST(runs.spec::jsonb #>> '{partition,num_users}' AS INTEGER)"
    return "CAST(json_extract(runs.spec, '$.partition.num_users') AS INTEGER)"


def upgrade() -> None:
    # Plain ALTER TABLE, no batch copy: on SQLite a copied `runs` or `users` would be dropped
    # with foreign keys on, deleting rounds and checkpoints by cascade (SQLite adds and, from
    # 3.35, drops such columns in place).
    op.add_column("users", sa.Column("quota_bytes", sa.BigInteger(), nullable=True))
    op.add_column(
        "runs", sa.Column("stored_bytes", sa.BigInteger(), nullable=False, server_default="0")
    )
    op.add_column("runs", sa.Column("estimated_bytes", sa.BigInteger(), nullable=True))
    op.create_index(
        "ix_runs_owner_status",
        "runs",
        ["owner_id", "status"],
        postgresql_include=["stored_bytes", "estimated_bytes"],
    )
    users = _num_users_sql(op.get_bind().dialect.name)
    op.execute(
        "UPDATE runs SET stored_bytes = "
        "COALESCE((SELECT SUM(c.size) FROM checkpoints c WHERE c.run_id = runs.id), 0) + "
        f"(CASE WHEN runs.current_round >= 0 THEN runs.current_round + 1 ELSE 0 END) * "
        f"({ROUND_BYTES_BASE} + {ROUND_BYTES_PER_USER} * COALESCE({users}, {DEFAULT_USERS}))"
    )


def downgrade() -> None:
    op.drop_index("ix_runs_owner_status", table_name="runs")
    op.drop_column("runs", "estimated_bytes")
    op.drop_column("runs", "stored_bytes")
    op.drop_column("users", "quota_bytes")
