"""Per-run limits (issue 28): FEDGEN_MAX_RUN_HOURS and FEDGEN_MAX_ATTEMPTS, on SQLite and Postgres.

The time limit is checked by the worker between rounds and by the dispatcher's pass; a death
(a worker that died holding the run) is counted by the pass and at claim time. Times are faked
through the run's segments and heartbeat, never waited for.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.dispatch import PassReport, dispatch_pass
from lab.models import RoundMetrics, Run, utcnow
from lab.repository import run_limits
from lab.repository import runs as runs_repo
from tests.support.factories import create_run, create_user, live_worker
from tests.support.fakes import FakeRunner, Killed
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome

H = 3600.0


def _row(session: Session, rid: uuid.UUID) -> Run:
    session.expire_all()
    row = session.get(Run, rid)
    assert row is not None
    return row


def _set(session: Session, rid: uuid.UUID, **values: Any) -> None:
    session.execute(update(Run).where(Run.id == rid).values(**values))
    session.commit()


def _pass(session: Session, s: Settings) -> tuple[PassReport, list[str]]:
    sent: list[str] = []
    report = dispatch_pass(session, lambda rid, _q: sent.append(rid), s, "test")
    return report, sent


def _segment(attempt: int, started: datetime, ended: datetime | None = None) -> dict[str, Any]:
    seg: dict[str, Any] = {"attempt": attempt, "worker": "w1", "start_round": 0}
    seg["started_at"] = started.isoformat()
    if ended is not None:
        seg["ended_at"] = ended.isoformat()
    return seg


# -- the pure rules ------------------------------------------------------------------


def test_running_time_sums_segments_and_skips_the_time_between_them() -> None:
    """Two closed segments of 1 h and 2 h, a day apart, and the current one 30 min in: 3.5 h."""
    t = datetime(2026, 1, 1, tzinfo=utcnow().tzinfo)
    segs = [
        _segment(1, t, t + timedelta(hours=1)),
        _segment(2, t + timedelta(days=1), t + timedelta(days=1, hours=2)),
        _segment(3, t + timedelta(days=2)),
    ]
    now = t + timedelta(days=2, minutes=30)
    assert run_limits.running_seconds(segs, 3, now) == pytest.approx(3.5 * H)
    # Claimed again (attempt 4) but not started yet: the open segment is not this claim's.
    assert run_limits.running_seconds(segs, 4, now) == pytest.approx(3 * H)
    assert run_limits.overrun(3.5 * H, 3.5, 3) is None
    why = run_limits.overrun(3.5 * H + 1, 3.5, 3)
    assert why == "ran longer than FEDGEN_MAX_RUN_HOURS=3.5 h (3.50 h over 3 segments)"


# -- FEDGEN_MAX_RUN_HOURS --------------------------------------------------------------


def test_worker_fails_a_run_past_the_time_limit_between_rounds(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """An earlier segment ran 73 h: the resumed run stops after its first round, failed."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=6)
    t = utcnow()
    earlier = [_segment(1, t - timedelta(hours=80), t - timedelta(hours=7))]
    # Handed back (no lease token: not a death), a round stored, an earlier segment of 73 h.
    _set(session, run.id, status="running", attempt=1, segments=earlier, current_round=-1)
    _set(session, run.id, lease_expires_at=t - timedelta(seconds=5), started_at=t)
    runner = FakeRunner()
    out = execute_run(str(run.id), factory, runner=runner, settings=settings, worker_name="w2")
    row = _row(session, run.id)
    assert out == RunOutcome.FAILED
    assert (row.status, row.current_round) == ("failed", 0)  # round 0, then the check
    assert row.error is not None
    assert row.error.startswith("ran longer than FEDGEN_MAX_RUN_HOURS=72 h (73.")
    assert "over 2 segments" in row.error


def test_time_queued_between_segments_does_not_count(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """A run killed 1 h into its first segment that waited 100 h for a worker is not over 72 h:
    the first segment ends when its last round was stored, not when the next one starts."""
    settings = settings.model_copy(update={"heartbeat_s": 60.0})
    user, _ = create_user(session)
    run = create_run(session, user, rounds=6, checkpoint_every=2)
    with pytest.raises(Killed):
        execute_run(str(run.id), factory, runner=FakeRunner(kill_at=4), settings=settings)
    row = _row(session, run.id)
    t = utcnow()
    segs = [{**row.segments[0], "started_at": (t - timedelta(hours=101)).isoformat()}]
    _set(session, run.id, segments=segs, lease_expires_at=t - timedelta(seconds=1))
    session.execute(
        update(RoundMetrics)
        .where(RoundMetrics.run_id == run.id)
        .values(created_at=t - timedelta(hours=100))
    )
    session.commit()
    out = execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
    row = _row(session, run.id)
    assert out == RunOutcome.SUCCEEDED, row.error
    first = row.segments[0]
    ended = datetime.fromisoformat(first["ended_at"]) - datetime.fromisoformat(first["started_at"])
    assert ended == timedelta(hours=1)


def test_dispatcher_fails_a_run_past_the_time_limit_instead_of_sending_it(
    session: Session, settings: Settings
) -> None:
    """Its worker is gone after 73 h of running: failed, not sent; one of 71 h is sent."""
    user, _ = create_user(session)
    over, under = create_run(session, user, seed=1), create_run(session, user, seed=2)
    live_worker(session, "cpu", slots=2)
    t = utcnow()
    for run, hours in ((over, 73), (under, 71)):
        started = t - timedelta(hours=hours + 5)
        _set(
            session,
            run.id,
            status="running",
            attempt=1,
            segments=[_segment(1, started)],
            heartbeat_at=started + timedelta(hours=hours),  # its last sign of life
            lease_expires_at=t - timedelta(seconds=5),
        )
    report, sent = _pass(session, settings)
    assert sent == [str(under.id)]
    row = _row(session, over.id)
    assert row.status == "failed"
    assert row.error is not None
    assert row.error.startswith("ran longer than FEDGEN_MAX_RUN_HOURS=72 h (73.00 h over 1 ")
    assert _row(session, under.id).status == "running"


def test_dispatcher_fails_a_stuck_run_its_live_worker_still_holds(
    session: Session, settings: Settings
) -> None:
    """A round that never ends: the lease is renewed, but 73 h of running fail the run."""
    user, _ = create_user(session)
    run = create_run(session, user)
    t = utcnow()
    _set(
        session,
        run.id,
        status="running",
        attempt=1,
        lease_token="alive",
        segments=[_segment(1, t - timedelta(hours=73))],
        heartbeat_at=t,
        lease_expires_at=t + timedelta(minutes=2),
    )
    _pass(session, settings.model_copy(update={"max_run_hours": 72.0}))
    row = _row(session, run.id)
    assert (row.status, row.lease_token) == ("failed", None)


# -- FEDGEN_MAX_ATTEMPTS ---------------------------------------------------------------


def _deaths(session: Session, rid: uuid.UUID) -> dict[str, object]:
    """The run's death count, less the lease it was counted for (a random token)."""
    info = _row(session, rid).info or {}
    assert set(info) == {"deaths"}, info
    return {k: v for k, v in info["deaths"].items() if k != "lease"}


def _die(session: Session, rid: uuid.UUID, worker: str) -> None:
    """A worker claims the run and dies holding it (its lease runs out)."""
    token = uuid.uuid4().hex
    assert runs_repo.claim(session, rid, worker=worker, token=token, device="cpu", lease_s=60)
    session.commit()
    _set(session, rid, lease_expires_at=utcnow() - timedelta(seconds=1))


def test_a_run_whose_worker_dies_max_attempts_times_fails_and_is_not_sent_again(
    session: Session, settings: Settings
) -> None:
    """Claimed and killed 5 times at the same round: the 5th death fails it, naming the limit."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    for k in range(1, 5):
        _die(session, run.id, f"w{k}")
        _, sent = _pass(session, settings)
        assert sent == [str(run.id)], k  # sent again, its death counted once
        assert _deaths(session, run.id) == {"count": k, "round": -1, "worker": f"w{k}"}
        assert _pass(session, settings)[1] == []  # counted once, sent once
    _die(session, run.id, "w5")
    _, sent = _pass(session, settings)
    row = _row(session, run.id)
    assert sent == []
    assert (row.status, row.lease_token) == ("failed", None)
    assert row.error is not None
    assert row.error.startswith("its worker died 5 times (FEDGEN_MAX_ATTEMPTS=5); last on w5")
    assert _pass(session, settings)[1] == []


def test_a_run_that_progresses_between_deaths_is_never_failed_for_them(
    session: Session, settings: Settings
) -> None:
    """4 deaths at round 3, then one at round 7 (a new round was stored): the count restarts."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    deaths = {"count": 4, "round": 3, "worker": "w1"}
    dead = {"status": "running", "lease_token": "dead", "worker": "w9", "attempt": 20}
    _set(session, run.id, **dead, current_round=7, info={"deaths": deaths})
    _set(session, run.id, lease_expires_at=utcnow() - timedelta(seconds=5))
    assert _pass(session, settings)[1] == [str(run.id)]
    assert _deaths(session, run.id) == {"count": 1, "round": 7, "worker": "w9"}


def test_hand_backs_and_outage_releases_are_not_deaths(
    session: Session, settings: Settings
) -> None:
    """A run handed back (dataset, out of memory) or given back in a database outage, claimed
    many times, is sent again with no death counted."""
    user, _ = create_user(session)
    handed, released = create_run(session, user, seed=1), create_run(session, user, seed=2)
    live_worker(session, "cpu", slots=2)
    for _ in range(7):
        for run in (handed, released):
            token = uuid.uuid4().hex
            assert runs_repo.claim(
                session, run.id, worker="w1", token=token, device="cpu", lease_s=60, max_attempts=5
            )
            _set(session, run.id, current_round=2)
            if run is handed:
                assert runs_repo.hand_back(session, run.id, token, "cannot load it here")
            else:
                assert run_limits.give_back(session, run.id, utcnow(), token)
            session.commit()
            _set(session, run.id, lease_expires_at=utcnow() - timedelta(seconds=1))
    _, sent = _pass(session, settings)
    assert sorted(sent) == sorted([str(handed.id), str(released.id)])
    for run in (handed, released):
        row = _row(session, run.id)
        assert (row.status, row.attempt) == ("running", 7)
        assert "deaths" not in (row.info or {})


def test_a_claim_counts_the_death_a_redelivered_message_finds(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """The message reaches a worker before the dispatcher saw the 5th death: the claim counts
    it, the run fails and nothing runs."""
    user, _ = create_user(session)
    run = create_run(session, user)
    deaths = {"count": 4, "round": -1, "worker": "w4"}
    dead = {"status": "running", "lease_token": "dead", "worker": "w5", "attempt": 5}
    _set(session, run.id, **dead, info={"deaths": deaths})
    _set(session, run.id, lease_expires_at=utcnow() - timedelta(seconds=5))
    runner = FakeRunner()
    out = execute_run(str(run.id), factory, runner=runner, settings=settings)
    row = _row(session, run.id)
    assert (out, runner.calls, row.status) == (RunOutcome.SKIPPED, [], "failed")
    assert row.error is not None
    assert row.error.startswith("its worker died 5 times (FEDGEN_MAX_ATTEMPTS=5); last on w5")


def test_deaths_survive_the_next_segments_start(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """A resumed segment's start (record_start replaces info) keeps the count."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=2)
    deaths = {"count": 2, "round": -1, "worker": "w1"}
    _set(session, run.id, status="running", lease_token="dead", worker="w1", attempt=2)
    _set(session, run.id, lease_expires_at=utcnow() - timedelta(seconds=5), info={"deaths": deaths})
    out = execute_run(
        str(run.id), factory, runner=FakeRunner(), settings=settings.model_copy(), worker_name="w3"
    )
    row = _row(session, run.id)
    assert out == RunOutcome.SUCCEEDED
    assert row.info is not None
    assert {k: v for k, v in row.info["deaths"].items() if k != "lease"} == {
        "count": 3,
        "round": -1,
        "worker": "w1",
    }
    assert row.info["label_histogram"]
