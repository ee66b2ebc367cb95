"""The database drives dispatch: run priority and dispatch state, live workers, dispatcher lease

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 01:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('priority', sa.String(length=8), server_default='normal', nullable=False)
        )
        batch_op.add_column(sa.Column('dispatched_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column('dispatch_count', sa.Integer(), server_default='0', nullable=False)
        )
        batch_op.add_column(
            sa.Column('next_dispatch_at', sa.DateTime(timezone=True), nullable=True)
        )
    op.create_table(
        'workers',
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('queue', sa.String(length=64), nullable=False),
        sa.Column('slots', sa.Integer(), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('name', 'queue', name=op.f('pk_workers')),
    )
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_workers_heartbeat_at'), ['heartbeat_at'], unique=False)
    op.create_table(
        'dispatcher',
        sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('holder', sa.String(length=200), nullable=True),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_dispatcher')),
    )


def downgrade() -> None:
    op.drop_table('dispatcher')
    with op.batch_alter_table('workers', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_workers_heartbeat_at'))
    op.drop_table('workers')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('next_dispatch_at')
        batch_op.drop_column('dispatch_count')
        batch_op.drop_column('dispatched_at')
        batch_op.drop_column('priority')
