"""Migration 0011 (member quotas) on both databases: every existing run's stored_bytes is filled
in from what it holds (its checkpoints' sizes and rounds 0..current_round at the per-round bytes
of its user count), its other rows survive, and a downgrade takes the columns off again."""

from __future__ import annotations

import uuid

from alembic import command
from sqlalchemy import Engine, inspect, text

from lab.db import make_engine
from migrations.apply import alembic_config

# The figures migration 0011 writes down (fedgen.sizes' at that revision).
BASE, PER_USER = 400, 18
AT = "2026-12-01 00:00:00"


def _id(engine: Engine, value: uuid.UUID) -> object:
    """A UUID as the dialect stores it (SQLite: 32 hex characters)."""
    return value.hex if engine.dialect.name == "sqlite" else value


def _seed(engine: Engine) -> tuple[uuid.UUID, uuid.UUID]:
    """A member with a 7-user run at round 9 holding two checkpoints, and a queued run."""
    user, done, queued = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with engine.begin() as c:
        c.execute(
            text("INSERT INTO users (id, name, is_admin, created_at) VALUES (:u, 'u', :f, :t)"),
            {"u": _id(engine, user), "f": False, "t": AT},
        )
        for rid, spec, current in (
            (done, '{"partition": {"num_users": 7}, "rounds": 9}', 9),
            (queued, "{}", -1),
        ):
            c.execute(
                text(
                    "INSERT INTO runs (id, spec, spec_hash, algorithm, dataset, tags_csv, rounds, "
                    "queue, owner_id, status, attempt, current_round, cancel_requested, versions, "
                    "segments, created_at, dispatch_count, priority) VALUES (:r, :spec, 'h', "
                    "'fedgen', 'mnist', ',', 9, 'cpu', :u, 'succeeded', 1, :cur, :f, '{}', '[]', "
                    ":t, 0, 'normal')"
                ),
                {
                    "r": _id(engine, rid),
                    "spec": spec,
                    "u": _id(engine, user),
                    "cur": current,
                    "f": False,
                    "t": AT,
                },
            )
        for rnd, kind, size in ((5, "generator", 1000), (9, "full", 234)):
            c.execute(
                text(
                    "INSERT INTO checkpoints (id, run_id, round, kind, size, sha256, created_at) "
                    "VALUES (:i, :r, :rnd, :k, :s, 'x', :t)"
                ),
                {
                    "i": _id(engine, uuid.uuid4()),
                    "r": _id(engine, done),
                    "rnd": rnd,
                    "k": kind,
                    "s": size,
                    "t": AT,
                },
            )
    return done, queued


def _stored(engine: Engine, run_id: uuid.UUID) -> int:
    with engine.connect() as c:
        q = text("SELECT stored_bytes FROM runs WHERE id = :r")
        return int(c.execute(q, {"r": _id(engine, run_id)}).scalar_one())


def test_upgrade_fills_stored_bytes_and_downgrade_removes_the_columns(bare_url: str) -> None:
    cfg = alembic_config(bare_url)
    command.upgrade(cfg, "0010")
    engine = make_engine(bare_url)
    done, queued = _seed(engine)

    command.upgrade(cfg, "0011")

    assert _stored(engine, done) == 1000 + 234 + 10 * (BASE + PER_USER * 7)
    assert _stored(engine, queued) == 0
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM checkpoints")).scalar() == 2
        assert c.execute(text("SELECT count(*) FROM runs")).scalar() == 2
        assert c.execute(text("SELECT quota_bytes FROM users")).scalar() is None
    command.downgrade(cfg, "0010")
    engine.dispose()
    engine = make_engine(bare_url)
    columns = {c["name"] for c in inspect(engine).get_columns("runs")}
    assert not {"stored_bytes", "estimated_bytes"} & columns
    assert "quota_bytes" not in {c["name"] for c in inspect(engine).get_columns("users")}
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM checkpoints")).scalar() == 2
    engine.dispose()
