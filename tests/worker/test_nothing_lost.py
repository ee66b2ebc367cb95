"""Nothing lost, nothing idle (SQLite and Postgres, fake runner): no round written past a hole,
no success with a hole, a dead holder's run taken back before its lease expires, a failed
checkpoint write retried, and a run's segments with a change of numerics marked.

The same against a Postgres server that really crashes: test_pg_crash.py; a slot killed with
SIGKILL: test_dead_slot.py; a full database disk: test_full_disk.py.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.dispatch import dispatch_pass, liveness
from lab.models import CheckpointRow, RoundMetrics, RoundUsers, Run, Worker, utcnow
from lab.repository import checkpoints as ckpt_repo
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from lab.repository import workers as workers_repo
from tests.support.factories import create_run, create_user, live_worker
from tests.support.fakes import FakeRunner, fake_acc
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome


def _run(session: Session, rid: uuid.UUID) -> Run:
    session.expire_all()
    run = session.get(Run, rid)
    assert run is not None
    return run


def _curve(session: Session, rid: uuid.UUID) -> list[tuple[int, float | None]]:
    stmt = select(RoundMetrics.round, RoundMetrics.test_acc).where(RoundMetrics.run_id == rid)
    return [(r, a) for r, a in session.execute(stmt.order_by(RoundMetrics.round))]


def _lose_rounds(session: Session, rid: uuid.UUID, first: int) -> None:
    """What a crash with asynchronous commits does: the newest rounds vanish, with their rows."""
    for model in (RoundMetrics, RoundUsers, CheckpointRow):
        session.execute(delete(model).where(model.run_id == rid, model.round >= first))
    session.commit()


def _crash_once(
    session: Session, rid: uuid.UUID, *, after: int, lose_from: int
) -> Callable[[int], None]:
    """A FakeRunner hook: once round `after` is written, rounds >= lose_from vanish."""
    fired: list[int] = []

    def crash(r: int) -> None:
        if r == after and not fired:
            fired.append(r)
            _lose_rounds(session, rid, lose_from)

    return crash


def _leased(session: Session, rounds: int = 6) -> uuid.UUID:
    user, _ = create_user(session)
    run = create_run(session, user, rounds=rounds)
    assert runs_repo.claim(session, run.id, worker="w", token="tok", device="cpu", lease_s=60)
    session.commit()
    return run.id


def _write(session: Session, rid: uuid.UUID, r: int) -> bool:
    out = metrics_repo.write_round(
        session,
        rid,
        "tok",
        round_=r,
        metrics={"test_acc": 0.1 * r},
        users=[],
        checkpoints=[],
        lease_s=60,
    )
    session.commit()
    return out


def test_a_round_is_never_written_past_a_hole(session: Session) -> None:
    """Round 2 without round 1 is refused (nothing written); a replay and the next round are not."""
    rid = _leased(session)
    assert _write(session, rid, 0)
    with pytest.raises(metrics_repo.RoundGap, match="round 1 is missing"):
        _write(session, rid, 2)
    session.rollback()
    assert _curve(session, rid) == [(0, 0.0)]
    assert _write(session, rid, 0) is False  # a replay is still a no-op
    assert _write(session, rid, 1)
    assert _write(session, rid, 2)
    assert [r for r, _ in _curve(session, rid)] == [0, 1, 2]
    assert metrics_repo.missing_rounds(session, rid, 4) == [3, 4]


def test_lost_rounds_found_at_the_next_write_are_recomputed(
    factory: sessionmaker[Session],
    session: Session,
    settings: Settings,
    client: TestClient,
    auth: dict[str, str],
) -> None:
    """Rounds 3 and 4 vanish after round 4 committed; round 5 finds the hole, the run resumes
    from checkpoint 2 and ends with every round once, its curve the uninterrupted one."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=8, checkpoint_every=2)
    runner = FakeRunner(on_round=_crash_once(session, run.id, after=4, lose_from=3))
    assert (
        execute_run(str(run.id), factory, runner=runner, settings=settings) == RunOutcome.SUCCEEDED
    )
    assert runner.calls == [0, 3]  # resumed from checkpoint 2
    assert _curve(session, run.id) == [(r, fake_acc(0, r)) for r in range(9)]
    segments = _run(session, run.id).segments
    assert [(s["start_round"], s["resumed_from"]) for s in segments] == [(0, None), (3, 2)]
    for path in ("", "/info"):
        shown = client.get(f"/api/v1/runs/{run.id}{path}", headers=auth).json()["segments"]
        ends = [(g["start_round"], g["last_round"], g["resumed_from"]) for g in shown]
        assert ends == [(0, 2, None), (3, 8, 2)]


def test_no_success_with_a_hole(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """The last rounds vanish after the last write: the durable finish finds them missing and
    the run resumes instead of succeeding with a hole."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=6, checkpoint_every=2)
    runner = FakeRunner(on_round=_crash_once(session, run.id, after=6, lose_from=5))
    assert (
        execute_run(str(run.id), factory, runner=runner, settings=settings) == RunOutcome.SUCCEEDED
    )
    assert runner.calls == [0, 5]
    assert _curve(session, run.id) == [(r, fake_acc(0, r)) for r in range(7)]
    assert _run(session, run.id).status == "succeeded"


class FullDisk:
    """Makes the first `fail` checkpoint writes fail as a full database disk does (SQLite's
    SQLITE_FULL; Postgres's 53100 is recognised the same way)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail: int) -> None:
        self.fail = fail
        real = ckpt_repo.insert_chunks

        def insert_chunks(conn: Any, pairs: Any) -> None:
            if self.fail > 0:
                self.fail -= 1
                cause = sqlite3.OperationalError("database or disk is full")
                raise OperationalError("INSERT INTO checkpoint_chunks", {}, cause)
            real(conn, pairs)

        monkeypatch.setattr(ckpt_repo, "insert_chunks", insert_chunks)


@pytest.fixture
def quick_retry(settings: Settings) -> Settings:
    return settings.model_copy(update={"storage_retries": 3, "storage_retry_delay_s": 0.01})


def test_full_disk_resumes_once_space_returns(
    factory: sessionmaker[Session],
    session: Session,
    quick_retry: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two failed checkpoint writes, then space: the run resumes and succeeds, notice cleared."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=4, checkpoint_every=2)
    notices: list[str | None] = []
    runner = FakeRunner(on_round=lambda r: notices.append(_run(session, run.id).error))
    FullDisk(monkeypatch, fail=2)
    out = execute_run(str(run.id), factory, runner=runner, settings=quick_retry)
    assert out == RunOutcome.SUCCEEDED
    assert runner.calls == [0, 0, 0]  # checkpoint 0 failed twice: no checkpoint yet, from 0
    assert any(n and "disk is full" in n and "try 2 of 3" in n for n in notices)
    row = _run(session, run.id)
    assert row.error is None
    assert _curve(session, run.id) == [(r, fake_acc(0, r)) for r in range(5)]


def test_full_disk_fails_the_run_after_the_last_try(
    factory: sessionmaker[Session],
    session: Session,
    quick_retry: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user, _ = create_user(session)
    run = create_run(session, user, rounds=4, checkpoint_every=2)
    FullDisk(monkeypatch, fail=100)
    out = execute_run(str(run.id), factory, runner=FakeRunner(), settings=quick_retry)
    assert out == RunOutcome.FAILED
    row = _run(session, run.id)
    assert row.status == "failed"
    assert "disk is full" in (row.error or "")
    assert "4 tries" in (row.error or "")


class Broker:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, run_id: str, _device: str) -> None:
        self.sent.append(run_id)

    def waiting(self, _queue: str) -> int:
        return len(self.sent)


def _held_by(session: Session, worker: str, heartbeat_age_s: float) -> Run:
    """A running run on a fresh lease (110 s left) whose last heartbeat is this old."""
    user, _ = create_user(session, f"u{uuid.uuid4().hex[:6]}")
    run = create_run(session, user)
    assert runs_repo.claim(session, run.id, worker=worker, token="t", device="cpu", lease_s=110)
    beat = utcnow() - timedelta(seconds=heartbeat_age_s)
    session.execute(update(Run).where(Run.id == run.id).values(heartbeat_at=beat))
    session.commit()
    return run


def test_a_dead_holder_frees_its_slot_before_its_lease_expires(
    session: Session, settings: Settings
) -> None:
    """Heartbeat missed twice and no live row of its worker: the run stops taking a slot and is
    sent again at once (without `live`, as the API's pass does, it takes the last free slot and
    waits for its lease); another worker may claim it; a live holder's run, or one still
    beating, stays put."""
    s = settings.model_copy(update={"heartbeat_s": 1.0})
    live = liveness(s)
    an_hour_ago = utcnow() - timedelta(hours=1)
    workers_repo.register(session, "alive", ["cpu"], 3, started_at=an_hour_ago)
    dead = _held_by(session, "dead", heartbeat_age_s=5)
    beating = _held_by(session, "dead", heartbeat_age_s=0)
    held = _held_by(session, "alive", heartbeat_age_s=5)
    broker = Broker()
    assert dispatch_pass(session, broker.send, s, "p", waiting=broker.waiting).sent == []
    report = dispatch_pass(session, broker.send, s, "p", waiting=broker.waiting, live=live)
    assert report.sent == [str(dead.id)]
    for run, ok in ((dead, True), (beating, False), (held, False)):
        got = runs_repo.claim(
            session, run.id, worker="new", token="n", device="cpu", lease_s=60, live=live
        )
        assert got is ok
    session.commit()


def test_a_restarted_worker_of_the_same_name_is_not_the_holder(
    session: Session, settings: Settings
) -> None:
    """A slot restarted under its old name registers anew (started after the run's last
    heartbeat): its predecessor's run counts as unheld."""
    live = liveness(settings.model_copy(update={"heartbeat_s": 1.0}))
    run = _held_by(session, "slot1@h", heartbeat_age_s=5)
    live_worker(session, "cpu", name="slot1@h")  # registered now: after the last heartbeat
    assert runs_repo.claim(
        session, run.id, worker="x", token="n", device="cpu", lease_s=60, live=live
    )
    other = _held_by(session, "slot2@h", heartbeat_age_s=5)
    session.execute(
        update(Worker)
        .where(Worker.name == "slot1@h")
        .values(started_at=utcnow() - timedelta(seconds=60))
    )
    session.execute(update(Run).where(Run.id == other.id).values(worker="slot1@h"))
    session.commit()
    assert not runs_repo.claim(
        session, other.id, worker="x", token="n2", device="cpu", lease_s=60, live=live
    )


def test_a_resume_on_other_numerics_is_marked(session: Session) -> None:
    rid = _leased(session)
    info = {"start_round": 0, "versions": {"fedgen": "1", "torch_threads": "2", "torch": "2.14"}}
    assert runs_repo.record_start(session, rid, "tok", info=info, device="cpu")
    later = {"start_round": 11, "versions": {**info["versions"], "torch_threads": "1"}}
    assert runs_repo.record_start(session, rid, "tok", info=later, device="cpu")
    session.commit()
    row = _run(session, rid)
    assert row.versions["numerics_changed"] == [{"round": 11, "torch_threads": ["2", "1"]}]
    assert [s["torch_threads"] for s in row.segments] == ["2", "1"]
    assert row.segments[1]["resumed_from"] == 10


def test_a_hole_that_keeps_coming_back_fails_the_run(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """Round 3 vanishes every time it is written (no crash does that): after MAX_GAP_RESUMES
    resumes in a row at the same hole the run fails, naming it, instead of looping."""
    from worker.claimed_run import MAX_GAP_RESUMES

    user, _ = create_user(session)
    run = create_run(session, user, rounds=6, checkpoint_every=2)

    def lose(r: int) -> None:
        if r == 3:
            _lose_rounds(session, run.id, 3)

    runner = FakeRunner(on_round=lose)
    assert execute_run(str(run.id), factory, runner=runner, settings=settings) == RunOutcome.FAILED
    assert runner.calls == [0] + [3] * MAX_GAP_RESUMES
    assert "round 3 is missing" in (_run(session, run.id).error or "")
