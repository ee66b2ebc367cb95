"""A run row's last_acc and best_acc follow its protocol, as its summary does

The row kept the newest stored round's accuracy and the highest over every stored round, round
R included, while the summary (and Live, the export header) leave round R out under
eval_timing before_training: one run showed two "best" figures. The row now takes only the
rounds its protocol counts (fedgen.stats.counts_round) and, once the run has a summary, its
final_acc and best_acc. This recomputes the rows that can differ: those whose round R is stored.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05 17:00:00
"""

import math
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

runs = sa.table(
    "runs",
    sa.column("id", sa.Uuid()),
    sa.column("rounds", sa.Integer()),
    sa.column("current_round", sa.Integer()),
    sa.column("info", sa.JSON()),
    sa.column("summary", sa.JSON()),
    sa.column("last_acc", sa.Float()),
    sa.column("best_acc", sa.Float()),
)
round_metrics = sa.table(
    "round_metrics",
    sa.column("run_id", sa.Uuid()),
    sa.column("round", sa.Integer()),
    sa.column("test_acc", sa.Float()),
)


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def _curve(bind: sa.Connection, run_id: Any, below: int | None) -> list[float]:
    """The run's stored accuracies by round, rounds < `below` (all when None)."""
    q = sa.select(round_metrics.c.test_acc).where(
        round_metrics.c.run_id == run_id, round_metrics.c.test_acc.is_not(None)
    )
    if below is not None:
        q = q.where(round_metrics.c.round < below)
    return [float(a) for a in bind.scalars(q.order_by(round_metrics.c.round))]


def _recompute(counted_only: bool) -> None:
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(runs.c.id, runs.c.rounds, runs.c.info, runs.c.summary).where(
            runs.c.current_round >= runs.c.rounds
        )
    ).all()
    for rid, rounds, info, summary in rows:
        figures: tuple[float | None, float | None] | None = None
        if counted_only and isinstance(summary, dict):
            final, best = _finite(summary.get("final_acc")), _finite(summary.get("best_acc"))
            if final is not None and best is not None:
                figures = final, best
        if figures is None:
            fidelity = (info.get("fidelity") or {}) if isinstance(info, dict) else {}
            before = fidelity.get("eval_timing") == "before_training"
            accs = _curve(bind, rid, rounds if counted_only and before else None)
            figures = (accs[-1], max(accs)) if accs else (None, None)
        bind.execute(
            sa.update(runs).where(runs.c.id == rid).values(last_acc=figures[0], best_acc=figures[1])
        )


def upgrade() -> None:
    _recompute(counted_only=True)


def downgrade() -> None:
    # The old figures: the newest stored round's accuracy and the best of every stored round.
    _recompute(counted_only=False)
