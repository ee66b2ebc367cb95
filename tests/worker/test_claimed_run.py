"""execute_run with a fake runner: success, lease, redelivery, resume, cancel, failure."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.models import CheckpointRow, RoundMetrics, RoundUsers, Run, utcnow
from tests.support.factories import create_run, create_user
from tests.support.fakes import FakeRunner, Killed, fake_acc
from worker.claimed_run import DatabaseUnavailable, RunNotFound, execute_run
from worker.outcomes import RunOutcome


def _run(session: Session, rid) -> Run:
    session.expire_all()
    return session.get(Run, rid)


def _count(session: Session, model, rid) -> int:
    return session.scalar(select(func.count()).select_from(model).where(model.run_id == rid))


def test_success_writes_every_round_once(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """A run goes queued -> succeeded with metrics, users, checkpoints and info."""
    # Prepare
    user, _ = create_user(session)
    run = create_run(session, user, rounds=4)
    # Execute
    out = execute_run(
        str(run.id), factory, runner=FakeRunner(), settings=settings, worker_name="w1"
    )
    # Assert
    assert out == RunOutcome.SUCCEEDED
    row = _run(session, run.id)
    assert (row.status, row.current_round, row.attempt, row.worker) == ("succeeded", 4, 1, "w1")
    assert row.last_acc == fake_acc(0, 4)
    assert row.best_acc == fake_acc(0, 4)
    assert row.info["label_histogram"]
    assert row.partition_fingerprint
    assert row.summary["status"] == "completed"
    assert _count(session, RoundMetrics, run.id) == 5
    assert _count(session, RoundUsers, run.id) == 5  # 3 users a round, one row
    assert _count(session, CheckpointRow, run.id) == 2  # the newest 2 of 5 full (keep_full)
    assert (
        execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
        == RunOutcome.SKIPPED
    )


def test_live_lease_makes_redelivery_a_noop(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """A second delivery while another worker holds a fresh lease does nothing."""
    # Prepare
    user, _ = create_user(session)
    run = create_run(session, user)
    session.execute(
        update(Run)
        .where(Run.id == run.id)
        .values(
            status="running", lease_token="other", lease_expires_at=utcnow() + timedelta(minutes=5)
        )
    )
    session.commit()
    runner = FakeRunner()
    # Execute
    out = execute_run(str(run.id), factory, runner=runner, settings=settings)
    # Assert
    assert out == RunOutcome.SKIPPED
    assert runner.calls == []
    assert _run(session, run.id).lease_token == "other"


def test_dead_worker_resumes_from_checkpoint(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """Killed mid-run, lease expires, a new delivery resumes: each round exactly once, same result."""
    # Prepare: a run heartbeat slower than the test, so the killed run's lease cannot look
    # unattended (two missed heartbeats, no worker row) before the test expires it.
    settings = settings.model_copy(update={"heartbeat_s": 60.0})
    user, _ = create_user(session)
    run = create_run(session, user, rounds=6, checkpoint_every=2)
    ref = create_run(session, user, rounds=6, checkpoint_every=2)
    execute_run(str(ref.id), factory, runner=FakeRunner(), settings=settings)
    with pytest.raises(Killed):
        execute_run(str(run.id), factory, runner=FakeRunner(kill_at=4), settings=settings)
    assert _run(session, run.id).current_round == 3
    runner = FakeRunner()
    assert execute_run(str(run.id), factory, runner=runner, settings=settings) == RunOutcome.SKIPPED
    session.execute(
        update(Run).where(Run.id == run.id).values(lease_expires_at=utcnow() - timedelta(seconds=1))
    )
    session.commit()
    # Execute
    out = execute_run(str(run.id), factory, runner=runner, settings=settings, worker_name="w2")
    # Assert
    assert out == RunOutcome.SUCCEEDED
    assert runner.calls == [3]
    row = _run(session, run.id)
    assert (row.attempt, row.worker, row.current_round) == (2, "w2", 6)
    rounds = session.scalars(
        select(RoundMetrics.round).where(RoundMetrics.run_id == run.id).order_by(RoundMetrics.round)
    ).all()
    assert rounds == list(range(7))
    ref_accs = session.scalars(
        select(RoundMetrics.test_acc)
        .where(RoundMetrics.run_id == ref.id)
        .order_by(RoundMetrics.round)
    ).all()
    accs = session.scalars(
        select(RoundMetrics.test_acc)
        .where(RoundMetrics.run_id == run.id)
        .order_by(RoundMetrics.round)
    ).all()
    assert accs == ref_accs
    assert row.last_acc == _run(session, ref.id).last_acc


def test_cancel_stops_between_rounds(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """cancel_requested set during round 1 stops the run before round 2; status cancelled."""
    # Prepare
    user, _ = create_user(session)
    run = create_run(session, user, rounds=10)

    def cancel_at(r: int) -> None:
        if r == 1:
            with factory() as s:
                s.execute(update(Run).where(Run.id == run.id).values(cancel_requested=True))
                s.commit()

    # Execute
    out = execute_run(
        str(run.id), factory, runner=FakeRunner(on_round=cancel_at), settings=settings
    )
    # Assert
    row = _run(session, run.id)
    assert out == RunOutcome.CANCELLED
    assert row.status == "cancelled"
    assert row.current_round == 1
    assert row.finished_at is not None


def test_failure_marks_failed_with_text(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """An exception in the simulation marks the run failed with its message."""
    # Prepare
    user, _ = create_user(session)
    run = create_run(session, user, rounds=5)
    # Execute
    out = execute_run(str(run.id), factory, runner=FakeRunner(fail_at=2), settings=settings)
    # Assert
    row = _run(session, run.id)
    assert out == RunOutcome.FAILED
    assert row.status == "failed"
    assert "RuntimeError: simulated failure in round 2" in row.error
    assert row.current_round == 1


def test_cancelled_before_claim_and_missing_run(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """A queued run cancelled before delivery is never run; an unknown id raises RunNotFound."""
    user, _ = create_user(session)
    run = create_run(session, user)
    session.execute(update(Run).where(Run.id == run.id).values(cancel_requested=True))
    session.commit()
    runner = FakeRunner()
    assert (
        execute_run(str(run.id), factory, runner=runner, settings=settings) == RunOutcome.CANCELLED
    )
    assert runner.calls == []
    assert _run(session, run.id).status == "cancelled"
    with pytest.raises(RunNotFound):
        execute_run(
            "00000000-0000-0000-0000-000000000000", factory, runner=runner, settings=settings
        )


def test_lost_lease_stops_writing(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """If another worker takes the lease, the first stops without touching the end state."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=5)

    def steal(r: int) -> None:
        if r == 1:
            with factory() as s:
                s.execute(update(Run).where(Run.id == run.id).values(lease_token="thief"))
                s.commit()

    out = execute_run(str(run.id), factory, runner=FakeRunner(on_round=steal), settings=settings)
    row = _run(session, run.id)
    assert out == RunOutcome.LOST
    assert row.status == "running"
    assert row.current_round == 1


def _db_down(*_a: object, **_k: object) -> None:
    from sqlalchemy.exc import OperationalError

    raise OperationalError("UPDATE runs", {}, Exception("server closed the connection"))


def test_database_error_releases_the_lease_for_the_retry(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """A database error is raised as DatabaseUnavailable (the task retries) and the lease is
    handed back, so the retry claims the run at once."""
    # Prepare
    user, _ = create_user(session)
    run = create_run(session, user, rounds=3)
    # Execute
    with pytest.raises(DatabaseUnavailable) as err:
        execute_run(str(run.id), factory, runner=_db_down, settings=settings)
    released = _run(session, run.id)
    retried = execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
    # Assert
    assert err.value.token
    assert err.value.progressed
    assert released.status == "running"
    assert released.lease_expires_at <= utcnow()
    assert retried == RunOutcome.SUCCEEDED
    assert _run(session, run.id).attempt == 2


def test_retry_hands_back_a_lease_the_outage_kept(
    factory: sessionmaker, session: Session, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the handback itself fails (the database is still away), the retry hands the lease
    back with the token it carries: without it the run would wait for the lease to expire."""
    import worker.claimed_run as ex

    # Prepare: a run heartbeat slower than the test, so the held lease cannot look unattended
    # (two missed heartbeats and no worker row) however slow the machine is.
    settings = settings.model_copy(update={"heartbeat_s": 60.0})
    user, _ = create_user(session)
    run = create_run(session, user, rounds=3)
    with monkeypatch.context() as m:
        m.setattr(ex, "_release", _db_down)
        with pytest.raises(DatabaseUnavailable) as err:
            execute_run(str(run.id), factory, runner=_db_down, settings=settings)
    # Execute
    held = _run(session, run.id)
    without_token = execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
    with_token = execute_run(
        str(run.id),
        factory,
        runner=FakeRunner(),
        settings=settings,
        release_token=err.value.token,
    )
    # Assert
    assert held.lease_expires_at > utcnow()  # still held: settings.lease_s is 30 s
    assert without_token == RunOutcome.SKIPPED
    assert with_token == RunOutcome.SUCCEEDED
    assert _count(session, RoundMetrics, run.id) == 4


def test_outage_before_the_claim_is_retried_without_progress(
    factory: sessionmaker, session: Session, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database away before anything was claimed: DatabaseUnavailable, no progress, and the
    token to hand back is the one the task carried in."""
    import lab.repository.runs as runs_repo

    user, _ = create_user(session)
    run = create_run(session, user, rounds=3)
    monkeypatch.setattr(runs_repo, "get_run", _db_down)
    with pytest.raises(DatabaseUnavailable) as err:
        execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
    assert not err.value.progressed
    assert err.value.token is None
    assert _run(session, run.id).status == "queued"


def test_retry_backoff_grows_to_its_cap() -> None:
    """1, 2, 4, 8 s ... capped: a 30 s outage costs a handful of tries, not the whole budget."""
    from worker.tasks import retry_delay

    s = Settings(db_retry_max_delay_s=15, database_url="sqlite://", broker_url="memory://")
    delays = [retry_delay(n, s) for n in range(8)]
    assert delays == [1, 2, 4, 8, 15, 15, 15, 15]
    assert s.db_retry_budget_s >= 300


def _checkpoints(s: Session, rid) -> list[tuple[int, str, str]]:
    """(round, kind, sha256) of a run's checkpoint rows, in order."""
    rows = s.execute(
        select(CheckpointRow.round, CheckpointRow.kind, CheckpointRow.sha256)
        .where(CheckpointRow.run_id == rid)
        .order_by(CheckpointRow.round, CheckpointRow.kind)
    )
    return [tuple(r) for r in rows]


def _files(settings: Settings, rid) -> list[str]:
    d = settings.checkpoint_root / str(rid)
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_run_deleted_mid_run_stops_and_leaves_nothing(
    factory: sessionmaker, session: Session, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """DELETE lands between two rounds: the worker stops at the next write, its checkpoints
    (rows and bytes) went with the run, no file is left, and it logs 'deleted', not 'lease lost'."""
    from lab.models import CheckpointChunk
    from lab.repository import runs as runs_repo

    user, _ = create_user(session)
    run = create_run(session, user, rounds=10, checkpoint_every=1)

    def delete_after(r: int) -> None:
        if r == 3:  # what DELETE /runs/{id} does
            with factory() as s:
                runs_repo.request_cancel(s, run.id)
                runs_repo.delete_run(s, run.id)
                s.commit()

    with caplog.at_level("INFO", logger="worker"):
        out = execute_run(
            str(run.id), factory, runner=FakeRunner(on_round=delete_after), settings=settings
        )
    assert out == RunOutcome.DELETED
    assert _files(settings, run.id) == []
    assert _count(session, CheckpointRow, run.id) == 0
    assert session.scalar(select(func.count()).select_from(CheckpointChunk)) == 0
    assert "deleted" in caplog.text
    assert "lease lost" not in caplog.text


def test_run_cancelled_mid_run_keeps_its_checkpoints(
    factory: sessionmaker, session: Session, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Cancel while running: status cancelled, rounds and every checkpoint committed before
    the cancel kept as they were (round, kind, sha256), no stray file."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=10, checkpoint_every=1)

    committed: list[tuple[int, str, str]] = []

    def cancel_at(r: int) -> None:
        if r == 2:
            with factory() as s:
                s.execute(update(Run).where(Run.id == run.id).values(cancel_requested=True))
                s.commit()
                committed.extend(_checkpoints(s, run.id))

    with caplog.at_level("INFO", logger="worker"):
        out = execute_run(
            str(run.id), factory, runner=FakeRunner(on_round=cancel_at), settings=settings
        )
    assert out == RunOutcome.CANCELLED
    assert _run(session, run.id).status == "cancelled"
    assert _count(session, RoundMetrics, run.id) == 3
    assert committed  # rounds 1 and 2 wrote a full checkpoint each
    session.expire_all()
    assert _checkpoints(session, run.id) == committed
    assert _files(settings, run.id) == []
    assert "lease lost" not in caplog.text
