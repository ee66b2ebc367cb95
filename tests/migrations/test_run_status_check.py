"""runs.status is held to vocab.run_status.RunStatus by the database (migration 0009): a check
constraint on Postgres, triggers on SQLite; adding them keeps every run's rows."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from lab.db import make_engine
from lab.models import Run
from migrations.apply import alembic_config
from tests.support.factories import create_run, create_user
from vocab.run_status import RunStatus

RUNS = Run.__table__


def test_every_status_is_stored(engine: Engine, session: Session) -> None:
    """Each RunStatus member is a status the database takes."""
    # Prepare
    owner, _ = create_user(session)
    create_run(session, owner)
    for status in RunStatus:
        # Execute
        with engine.begin() as c:
            c.execute(update(RUNS).values(status=status))
            stored = c.execute(select(RUNS.c.status)).scalar()
        # Assert
        assert stored == status.value


def test_an_unknown_status_is_refused(engine: Engine, session: Session) -> None:
    """An update or an insert leaving a word outside RunStatus fails, naming the check."""
    # Prepare
    owner, _ = create_user(session)
    run = create_run(session, owner)
    stored = [c for c in RUNS.columns if c.computed is None]  # a generated column is not set
    with engine.connect() as c:
        row = dict(c.execute(select(*stored).where(RUNS.c.id == run.id)).mappings().one())
    # Execute / Assert
    with pytest.raises(IntegrityError, match="ck_runs_status"), engine.begin() as c:
        c.execute(update(RUNS).values(status="finished"))
    with pytest.raises(IntegrityError, match="ck_runs_status"), engine.begin() as c:
        c.execute(insert(RUNS).values({**row, "id": uuid.uuid4(), "status": "done"}))
    with engine.connect() as c:
        assert c.execute(select(RUNS.c.status)).scalars().all() == [RunStatus.QUEUED]


def test_sqlite_upgrade_keeps_the_runs_rows(tmp_path: Path) -> None:
    """Adding the check on SQLite copies no table: a run's rounds survive the upgrade (a
    batch copy would drop `runs` with foreign keys on, deleting them by cascade)."""
    # Prepare
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    command.upgrade(alembic_config(url), "0008")
    engine = make_engine(url)
    with engine.begin() as c:
        user, run = uuid.uuid4().hex, uuid.uuid4().hex
        c.execute(
            text("INSERT INTO users (id, name, is_admin, created_at) VALUES (:u, 'u', 0, :t)"),
            {"u": user, "t": "2026-12-01 00:00:00"},
        )
        c.execute(
            text(
                "INSERT INTO runs (id, spec, spec_hash, algorithm, dataset, tags_csv, rounds, "
                "queue, owner_id, status, attempt, current_round, cancel_requested, versions, "
                "created_at, dispatch_count, priority) VALUES (:r, '{}', 'h', 'fedavg', "
                "'mnist', ',', 3, 'cpu', :u, 'succeeded', 1, 0, 0, '{}', :t, 0, 'normal')"
            ),
            {"r": run, "u": user, "t": "2026-12-01 00:00:00"},
        )
        c.execute(
            text(
                "INSERT INTO round_metrics (run_id, round, metrics, created_at) "
                "VALUES (:r, 0, '{}', :t)"
            ),
            {"r": run, "t": "2026-12-01 00:00:00"},
        )
    engine.dispose()
    # Execute
    command.upgrade(alembic_config(url), "0009")
    # Assert
    engine = make_engine(url)
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM round_metrics")).scalar() == 1
        assert c.execute(text("SELECT status FROM runs")).scalar() == "succeeded"
    engine.dispose()
