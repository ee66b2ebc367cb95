"""Migration 0014 on both databases: a run row's last_acc and best_acc become the protocol's
figures (round R left out under before_training): a run with a summary takes its final_acc and
best_acc, one without is recomputed from its stored rounds; a downgrade puts back the old
figures (the newest stored round and the best of every stored round)."""

from __future__ import annotations

import uuid
from datetime import datetime

from alembic import command
from sqlalchemy import Engine, insert, text

from lab.db import make_engine
from lab.models import RoundMetrics
from migrations.apply import alembic_config

AT = "2026-12-01 00:00:00"
# Rounds 0..3 of a run of R = 3: round 3 is the highest and, under before_training, not counted.
CURVE = [0.1, 0.6, 0.5, 0.9]


def _id(engine: Engine, value: uuid.UUID) -> object:
    """A UUID as the dialect stores it (SQLite: 32 hex characters)."""
    return value.hex if engine.dialect.name == "sqlite" else value


def _seed(engine: Engine) -> tuple[uuid.UUID, uuid.UUID]:
    """A succeeded run with its summary and a failed one without, both at round 3 of 3 with
    the old figures (0.9, 0.9) in their row."""
    user, done, failed = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    info = '{"fidelity": {"eval_timing": "before_training"}}'
    with engine.begin() as c:
        c.execute(
            text("INSERT INTO users (id, name, is_admin, created_at) VALUES (:u, 'u', :f, :t)"),
            {"u": _id(engine, user), "f": False, "t": AT},
        )
        for rid, status, summary in (
            (done, "succeeded", '{"final_acc": 0.5, "best_acc": 0.6}'),
            (failed, "failed", None),
        ):
            c.execute(
                text(
                    "INSERT INTO runs (id, spec, spec_hash, algorithm, dataset, tags_csv, rounds, "
                    "queue, owner_id, status, attempt, current_round, cancel_requested, versions, "
                    "segments, created_at, dispatch_count, priority, info, summary, last_acc, "
                    "best_acc) VALUES (:r, '{}', 'h', 'fedavg', 'mnist', ',', 3, 'cpu', :u, :s, "
                    "1, 3, :f, '{}', '[]', :t, 0, 'normal', :info, :summary, 0.9, 0.9)"
                ),
                {
                    "r": _id(engine, rid),
                    "u": _id(engine, user),
                    "s": status,
                    "f": False,
                    "t": AT,
                    "info": info,
                    "summary": summary,
                },
            )
            c.execute(
                insert(RoundMetrics),
                [
                    {
                        "run_id": rid,
                        "round": r,
                        "test_acc": a,
                        "metrics": {"test_acc": a},
                        "created_at": datetime(2026, 12, 1),
                    }
                    for r, a in enumerate(CURVE)
                ],
            )
    return done, failed


def _figures(engine: Engine, run_id: uuid.UUID) -> tuple[float | None, float | None]:
    with engine.connect() as c:
        q = text("SELECT last_acc, best_acc FROM runs WHERE id = :r")
        last, best = c.execute(q, {"r": _id(engine, run_id)}).one()
        return last, best


def test_upgrade_writes_the_protocol_figures_and_downgrade_the_old(bare_url: str) -> None:
    cfg = alembic_config(bare_url)
    command.upgrade(cfg, "0013")
    engine = make_engine(bare_url)
    done, failed = _seed(engine)

    command.upgrade(cfg, "0014")

    assert _figures(engine, done) == (0.5, 0.6)  # the summary's final and best
    assert _figures(engine, failed) == (0.5, 0.6)  # rounds 0..2 of its stored 0..3
    command.downgrade(cfg, "0013")
    assert _figures(engine, done) == (0.9, 0.9)
    assert _figures(engine, failed) == (0.9, 0.9)
    engine.dispose()
