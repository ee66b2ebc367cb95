"""Notes and tags editable after submission (runs, sweeps); webhooks and their deliveries;
what a run cost (peak memory, CPU seconds, GPU peak memory, out-of-memory re-queues)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 23:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("note", sa.Text(), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("annotated_by", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("annotated_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("peak_rss_bytes", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("cpu_s", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("gpu_peak_bytes", sa.BigInteger(), nullable=True))
        batch_op.add_column(
            sa.Column("oom_count", sa.Integer(), nullable=False, server_default="0")
        )
    _copy_spec_notes()
    with op.batch_alter_table("sweeps", schema=None) as batch_op:
        batch_op.add_column(sa.Column("note", sa.Text(), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("tags_csv", sa.Text(), nullable=False, server_default=","))
        batch_op.add_column(sa.Column("annotated_by", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("annotated_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "webhooks",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["users.id"], name=op.f("fk_webhooks_owner_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhooks")),
    )
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_webhooks_owner_id"), ["owner_id"], unique=False)
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("webhook_id", sa.Uuid(), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("subject", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False, server_default="pending"),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhooks.id"],
            name=op.f("fk_webhook_deliveries_webhook_id_webhooks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
        sa.UniqueConstraint("webhook_id", "event", "subject", name="uq_webhook_deliveries_once"),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_deliveries_due", ["status", "next_attempt_at"], unique=False
        )


def _copy_spec_notes() -> None:
    """A run's note starts as its spec's `note`; copy the existing runs' notes into the column."""
    runs = sa.table(
        "runs",
        sa.column("id", sa.Uuid()),
        sa.column("spec", sa.JSON()),
        sa.column("note", sa.Text()),
    )
    bind = op.get_bind()
    for run_id, spec in bind.execute(sa.select(runs.c.id, runs.c.spec)).all():
        note = (spec or {}).get("note") or ""
        if note:
            bind.execute(runs.update().where(runs.c.id == run_id).values(note=note))


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_due")
    op.drop_table("webhook_deliveries")
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhooks_owner_id"))
    op.drop_table("webhooks")
    with op.batch_alter_table("sweeps", schema=None) as batch_op:
        batch_op.drop_column("annotated_at")
        batch_op.drop_column("annotated_by")
        batch_op.drop_column("tags_csv")
        batch_op.drop_column("note")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("oom_count")
        batch_op.drop_column("gpu_peak_bytes")
        batch_op.drop_column("cpu_s")
        batch_op.drop_column("peak_rss_bytes")
        batch_op.drop_column("annotated_at")
        batch_op.drop_column("annotated_by")
        batch_op.drop_column("note")
