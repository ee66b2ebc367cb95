"""runs.queue holds the real queue name, FEDGEN_QUEUE_PREFIX (at most 50 chars) included

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 00:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.alter_column(
            'queue', existing_type=sa.String(length=16), type_=sa.String(length=64),
            existing_nullable=False,
        )


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.alter_column(
            'queue', existing_type=sa.String(length=64), type_=sa.String(length=16),
            existing_nullable=False,
        )
