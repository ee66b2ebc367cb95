"""Compact per-round storage: a round's metrics packed, its users' figures one packed row

round_metrics.metrics (a JSON object) becomes the packed bytes of lab/round_pack.py
(pack_metrics); user_metrics (one row per user per round) becomes round_users, one row per
(run, round) holding every user's figures (pack_users). Both formats are lossless: every value
reads back equal (tests/migrations/test_compact_rounds.py checks it both ways on both databases).
Rows are converted a run at a time, so a large lab is never held in memory at once.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 16:10:00
"""

import json
import uuid
from collections.abc import Iterator, Sequence
from itertools import groupby
from typing import Any

import sqlalchemy as sa
from alembic import op

from lab.round_pack import pack_metrics, pack_users, unpack_metrics, unpack_users

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The per-user columns of user_metrics, in lab.round_pack.USER_FIELDS' order (version 1).
USER_COLUMNS = ("user", "test_acc", "test_loss", "num_test", "selected", "train_ms", "train_loss")
_BATCH = 1000  # rows an INSERT or UPDATE executemany sends at once

round_metrics = sa.table(
    "round_metrics",
    sa.column("run_id", sa.Uuid()),
    sa.column("round", sa.Integer()),
    sa.column("metrics", sa.JSON()),
    sa.column("packed", sa.LargeBinary()),
)
user_metrics = sa.table(
    "user_metrics",
    sa.column("run_id", sa.Uuid()),
    sa.column("round", sa.Integer()),
    *(sa.column(c) for c in USER_COLUMNS),
)
round_users = sa.table(
    "round_users",
    sa.column("run_id", sa.Uuid()),
    sa.column("round", sa.Integer()),
    sa.column("data", sa.LargeBinary()),
)


def _run_ids(table: Any) -> list[uuid.UUID]:
    return list(op.get_bind().scalars(sa.select(table.c.run_id).distinct()))


def _batches(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _metrics_json(value: Any) -> dict[str, Any]:
    """A stored JSON object: parsed already (JSON type) or still text (a driver that leaves it)."""
    return json.loads(value) if isinstance(value, str | bytes) else dict(value)


def _pack_rounds() -> None:
    """round_metrics.metrics JSON -> packed bytes, through the `packed` column."""
    conn = op.get_bind()
    with op.batch_alter_table("round_metrics") as batch:
        batch.add_column(sa.Column("packed", sa.LargeBinary(), nullable=True))
    update = (
        round_metrics.update()
        .where(
            round_metrics.c.run_id == sa.bindparam("rid"),
            round_metrics.c.round == sa.bindparam("rnd"),
        )
        .values(packed=sa.bindparam("p"))
    )
    for run_id in _run_ids(round_metrics):
        rows = conn.execute(
            sa.select(round_metrics.c.round, round_metrics.c.metrics).where(
                round_metrics.c.run_id == run_id
            )
        )
        packed = (
            {"rid": run_id, "rnd": r, "p": pack_metrics(_metrics_json(m))} for r, m in rows.all()
        )
        for chunk in _batches(packed):
            conn.execute(update, chunk)
    with op.batch_alter_table("round_metrics") as batch:
        batch.drop_column("metrics")
        batch.alter_column(
            "packed", new_column_name="metrics", existing_type=sa.LargeBinary(), nullable=False
        )


def _unpack_rounds() -> None:
    """The reverse of _pack_rounds: packed bytes -> a JSON object again."""
    conn = op.get_bind()
    with op.batch_alter_table("round_metrics") as batch:
        batch.alter_column(
            "metrics", new_column_name="packed", existing_type=sa.LargeBinary(), nullable=True
        )
    with op.batch_alter_table("round_metrics") as batch:  # after the rename: SQLite rebuilds
        batch.add_column(sa.Column("metrics", sa.JSON(), nullable=True))
    update = (
        round_metrics.update()
        .where(
            round_metrics.c.run_id == sa.bindparam("rid"),
            round_metrics.c.round == sa.bindparam("rnd"),
        )
        .values(metrics=sa.bindparam("m", type_=sa.JSON()))
    )
    for run_id in _run_ids(round_metrics):
        rows = conn.execute(
            sa.select(round_metrics.c.round, round_metrics.c.packed).where(
                round_metrics.c.run_id == run_id
            )
        )
        plain = ({"rid": run_id, "rnd": r, "m": unpack_metrics(bytes(p))} for r, p in rows.all())
        for chunk in _batches(plain):
            conn.execute(update, chunk)
    with op.batch_alter_table("round_metrics") as batch:
        batch.alter_column("metrics", existing_type=sa.JSON(), nullable=False)
        batch.drop_column("packed")


def _create_round_users() -> None:
    op.create_table(
        "round_users",
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("round", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_round_users_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "round", name=op.f("pk_round_users")),
    )


def _create_user_metrics() -> None:
    """user_metrics as revision 0001 made it."""
    op.create_table(
        "user_metrics",
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("round", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("user", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("test_acc", sa.Float(), nullable=False),
        sa.Column("test_loss", sa.Float(), nullable=False),
        sa.Column("num_test", sa.Integer(), nullable=False),
        sa.Column("selected", sa.Boolean(), nullable=False),
        sa.Column("train_ms", sa.Float(), nullable=True),
        sa.Column("train_loss", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_user_metrics_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "round", "user", name=op.f("pk_user_metrics")),
    )


def _pack_users() -> None:
    conn = op.get_bind()
    cols = [user_metrics.c[c] for c in USER_COLUMNS]
    for run_id in _run_ids(user_metrics):
        rows = conn.execute(
            sa.select(user_metrics.c.round, *cols)
            .where(user_metrics.c.run_id == run_id)
            .order_by(user_metrics.c.round, user_metrics.c.user)
        ).all()
        packed = (
            {"run_id": run_id, "round": rnd, "data": pack_users([tuple(r[1:]) for r in group])}
            for rnd, group in groupby(rows, key=lambda r: r[0])
        )
        for chunk in _batches(packed):
            conn.execute(round_users.insert(), chunk)


def _unpack_users() -> None:
    conn = op.get_bind()
    for run_id in _run_ids(round_users):
        rows = conn.execute(
            sa.select(round_users.c.round, round_users.c.data).where(round_users.c.run_id == run_id)
        ).all()
        plain = (
            {"run_id": run_id, "round": rnd, **{c: getattr(u, c) for c in USER_COLUMNS}}
            for rnd, data in rows
            for u in unpack_users(bytes(data))
        )
        for chunk in _batches(plain):
            conn.execute(user_metrics.insert(), chunk)


def upgrade() -> None:
    _create_round_users()
    _pack_users()
    op.drop_table("user_metrics")
    _pack_rounds()


def downgrade() -> None:
    _unpack_rounds()
    _create_user_metrics()
    _unpack_users()
    op.drop_table("round_users")
