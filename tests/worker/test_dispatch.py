"""The dispatch pass against a real database (SQLite and Postgres), with a recording sender.

Fair share, priority, free-slot accounting, re-sends of lost messages with back-off per run,
broker refusal, expired leases, the one-dispatcher lease, and the queue fields of the API.
The same passes against a real Redis and real worker processes: test_dispatch_real.py.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from lab.config import Settings
from lab.dispatch import backoff_s, dispatch_pass
from lab.fairshare import Active, Snapshot, Waiting, expected_starts, fair_order
from lab.models import Run, User, Worker, utcnow
from lab.repository import dispatch_state
from lab.repository import runs as runs_repo
from tests.support.factories import create_run, create_user, live_worker, make_spec
from vocab.run_status import Priority

API = "/api/v1"


@pytest.fixture
def fast(settings: Settings) -> Settings:
    """Test settings: 1 s until an unclaimed run may be re-sent, at most 8 s between sends."""
    return settings.model_copy(
        update={"reaper_s": 0.5, "dispatch_timeout_s": 1.0, "dispatch_backoff_max_s": 8.0}
    )


class Broker:
    """A recording sender whose queues can lose messages; `down` makes sends fail."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.queue: list[str] = []  # messages waiting (one queue is enough here)
        self.down = False

    def send(self, run_id: str, _device: str) -> None:
        if self.down:
            raise ConnectionError("broker down")
        self.sent.append(run_id)
        self.queue.append(run_id)

    def waiting(self, _queue: str) -> int:
        if self.down:
            raise ConnectionError("broker down")
        return len(self.queue)


def _pass(session: Session, broker: Broker, s: Settings, now: datetime | None = None):  # type: ignore[no-untyped-def]
    return dispatch_pass(session, broker.send, s, "test", waiting=broker.waiting, now=now)


def _beat(session: Session, at: datetime) -> None:
    """Every worker row beats at `at` (passes run at a simulated `now`; workers stay live)."""
    session.execute(update(Worker).values(heartbeat_at=at))
    session.commit()


def _claim(session: Session, run: Run, worker: str = "w1") -> str:
    token = uuid.uuid4().hex
    assert runs_repo.claim(session, run.id, worker=worker, token=token, device="cpu", lease_s=60)
    session.commit()
    return token


def _finish(session: Session, run: Run, token: str) -> None:
    assert runs_repo.finish(session, run.id, token, status="succeeded")
    session.commit()


def test_sends_only_as_many_runs_as_there_are_free_slots(session: Session, fast: Settings) -> None:
    """No live worker: nothing is sent; 2 slots: 2 of 5 runs; a dead worker's slots do not count."""
    user, _ = create_user(session)
    runs = [create_run(session, user, seed=i) for i in range(5)]
    broker = Broker()
    assert _pass(session, broker, fast).sent == []
    live_worker(session, "cpu", slots=2)
    report = _pass(session, broker, fast)
    assert report.sent == [str(runs[0].id), str(runs[1].id)]
    assert _pass(session, broker, fast).sent == []  # both still on their way: no free slot
    later = utcnow() + timedelta(seconds=fast.worker_ttl_s + 1)
    broker.queue.clear()  # even with the messages gone, a dead worker's slots hold nothing
    session.execute(update(Run).values(next_dispatch_at=later + timedelta(days=1)))
    session.commit()
    assert _pass(session, broker, fast, now=later).sent == []


def test_two_owners_one_slot_the_lab_mate_goes_before_the_sweeps_rest(
    session: Session, fast: Settings
) -> None:
    """alice queues 3 runs, then bob 1; one slot: bob's run starts before alice's third (second)."""
    alice, _ = create_user(session, "alice")
    bob, _ = create_user(session, "bob")
    a = [create_run(session, alice, seed=i) for i in range(3)]
    b1 = create_run(session, bob, seed=9)
    live_worker(session, "cpu", slots=1)
    broker = Broker()
    started: list[uuid.UUID] = []
    for _ in range(4):
        report = _pass(session, broker, fast)
        assert len(report.sent) == 1, report
        run = session.get(Run, uuid.UUID(report.sent[0]))
        assert run is not None
        started.append(run.id)
        _finish(session, run, _claim(session, run))
    assert started.index(b1.id) < started.index(a[2].id)
    assert started == [a[0].id, b1.id, a[1].id, a[2].id]


def test_fair_order_counts_running_runs_and_priority_tiers() -> None:
    """alice has a run going: bob's first waits less; an admin's high run goes first of all."""
    t0 = datetime(2026, 1, 1)
    alice, bob, admin = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()

    def w(owner: uuid.UUID, minute: int, priority: Priority = Priority.NORMAL) -> Waiting:
        return Waiting(
            id=uuid.uuid4(),
            queue="cpu",
            owner_id=owner,
            priority=priority,
            created_at=t0 + timedelta(minutes=minute),
            rounds=10,
            current_round=-1,
            resumed=False,
            dispatched_at=None,
            dispatch_count=0,
            next_dispatch_at=None,
        )

    a1, a2, b1, low, high = (
        w(alice, 0),
        w(alice, 1),
        w(bob, 5),
        w(bob, 2, Priority.LOW),
        w(admin, 9, Priority.HIGH),
    )
    order = fair_order([a1, a2, b1, low, high], {alice: 1}, {alice: t0})
    assert order == [high, b1, a1, a2, low]


def test_lost_message_is_resent_once_with_back_off(session: Session, fast: Settings) -> None:
    """A sent run whose message vanished is sent again after 1 s, then 2 s, 4 s, 8 s, 8 s..."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    broker = Broker()
    t = utcnow()
    assert _pass(session, broker, fast, now=t).sent == [str(run.id)]
    sends = [0.0]
    # 65 s of passes every second while the message keeps getting lost (the issue saw 13 sends).
    for k in range(1, 66):
        broker.queue.clear()
        _beat(session, t + timedelta(seconds=k))
        report = _pass(session, broker, fast, now=t + timedelta(seconds=k))
        if report.resent:
            sends.append(float(k))
    gaps = [b - a for a, b in zip(sends, sends[1:], strict=False)]
    assert gaps[:4] == [1.0, 2.0, 4.0, 8.0]
    assert set(gaps[4:]) == {8.0}
    assert len(sends) == 1 + 4 + (65 - 15) // 8
    assert backoff_s(fast, 0) == 1.0


def test_a_waiting_message_is_never_doubled(session: Session, fast: Settings) -> None:
    """While the run's message still waits in the broker, no pass sends another (one outstanding)."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    broker = Broker()
    t = utcnow()
    for k in range(0, 40):  # 40 passes over 120 s: far past every back-off step
        _beat(session, t + timedelta(seconds=3 * k))
        _pass(session, broker, fast, now=t + timedelta(seconds=3 * k))
        assert broker.waiting("cpu") <= 1
    assert broker.sent == [str(run.id)]


def test_broker_down_leaves_the_run_unsent_and_the_next_pass_sends_it(
    session: Session, fast: Settings
) -> None:
    """A refused send is undone (no back-off, no phantom message); once the broker is back it goes."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    broker = Broker()
    broker.down = True
    report = _pass(session, broker, fast)
    assert report.failed
    assert report.sent == []
    session.expire_all()
    row = session.get(Run, run.id)
    assert row is not None
    assert (row.dispatched_at, row.dispatch_count) == (None, 0)
    broker.down = False
    assert _pass(session, broker, fast).sent == [str(run.id)]


def test_expired_lease_is_resent_once_not_every_pass(session: Session, fast: Settings) -> None:
    """A running run whose worker died is sent once; while that message waits, never again."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    broker = Broker()
    _pass(session, broker, fast)
    broker.queue.clear()  # the worker took the message...
    _claim(session, run)  # ...claimed the run, and died (lease 60 s)
    later = utcnow() + timedelta(seconds=61)
    live_worker(session, "cpu", slots=1, name="w2")
    session.execute(  # w2 stays alive through the simulated minute; w1 died with the run
        update(Worker).where(Worker.name == "w2").values(heartbeat_at=later + timedelta(seconds=60))
    )
    session.commit()
    sends = [_pass(session, broker, fast, now=later + timedelta(seconds=k)).sent for k in range(30)]
    assert sends[0] == [str(run.id)]
    assert all(s == [] for s in sends[1:])


def test_cancelled_run_of_a_dead_worker_is_cancelled_not_resent(
    session: Session, fast: Settings
) -> None:
    """Cancel asked, then the worker died: the pass marks it cancelled and sends nothing."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    broker = Broker()
    _pass(session, broker, fast)
    _claim(session, run)
    runs_repo.request_cancel(session, run.id)
    session.commit()
    later = utcnow() + timedelta(seconds=61)
    session.execute(update(Worker).values(heartbeat_at=later))
    session.commit()
    assert _pass(session, broker, fast, now=later).sent == []
    session.expire_all()
    row = session.get(Run, run.id)
    assert row is not None
    assert row.status == "cancelled"


def test_exhausted_retries_queued_run_is_resent(session: Session, fast: Settings) -> None:
    """A task that gave up (message acked, run still queued) leaves no message: the run is re-sent."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    broker = Broker()
    t = utcnow()
    _pass(session, broker, fast, now=t)
    broker.queue.clear()  # delivered; Celery's retries ran out; the run stayed queued
    assert _pass(session, broker, fast, now=t + timedelta(seconds=0.5)).resent == []
    assert _pass(session, broker, fast, now=t + timedelta(seconds=1)).resent == [str(run.id)]


def test_one_dispatcher_at_a_time(session: Session, fast: Settings) -> None:
    """While one holder has the dispatcher lease another's pass does nothing; after release it works."""
    user, _ = create_user(session)
    create_run(session, user)
    live_worker(session, "cpu", slots=1)
    assert dispatch_state.take_dispatch_lease(session, "other", 30)
    session.commit()
    broker = Broker()
    assert _pass(session, broker, fast).locked
    assert broker.sent == []
    dispatch_state.release_dispatch_lease(session, "other")
    session.commit()
    assert len(_pass(session, broker, fast).sent) == 1


def test_claim_clears_the_dispatch_state(session: Session, fast: Settings) -> None:
    """Claimed: no longer counted as on its way, and a later lease expiry starts from count 0."""
    user, _ = create_user(session)
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1)
    _pass(session, Broker(), fast)
    _claim(session, run)
    session.expire_all()
    row = session.get(Run, run.id)
    assert row is not None
    assert (row.dispatched_at, row.dispatch_count, row.next_dispatch_at) == (None, 0, None)


def test_expected_start_from_median_round_time() -> None:
    """One slot busy for 5 more rounds of 2 s: the next run starts in 10 s, the one after in 10+2x4."""
    now = datetime(2026, 1, 1, 12)
    owner = uuid.uuid4()
    busy = Active(uuid.uuid4(), "cpu", owner, now - timedelta(seconds=10), 4, 10)
    snap = Snapshot(now=now, waiting=[], active=[busy], slots={"cpu": 1}, last_start={})
    ws = [
        Waiting(uuid.uuid4(), "cpu", owner, Priority.NORMAL, now, 4, -1, False, None, 0, None)
        for _ in range(2)
    ]
    starts = expected_starts(snap, "cpu", ws)
    assert starts[ws[0].id] == now + timedelta(seconds=10)
    assert starts[ws[1].id] == now + timedelta(seconds=18)
    no_worker = Snapshot(now=now, waiting=[], active=[busy], slots={}, last_start={})
    assert expected_starts(no_worker, "cpu", ws) == {}


def test_api_shows_queue_position_and_expected_start(
    client: TestClient, tokens: dict[str, str], session: Session, enqueued: list
) -> None:
    """Queued runs carry queue_position (fair order) and expected_start; others carry nulls."""
    h = {name: {"Authorization": f"Bearer {t}"} for name, t in tokens.items()}
    ids = [
        client.post(f"{API}/runs", json={"spec": make_spec(seed=i)}, headers=h["alice"]).json()[
            "id"
        ]
        for i in range(3)
    ]
    bob = client.post(f"{API}/runs", json={"spec": make_spec(seed=9)}, headers=h["bob"]).json()
    assert enqueued == []  # no live worker: nothing sent, nothing known about the start
    assert (bob["queue_position"], bob["expected_start"]) == (2, None)
    got = {r["id"]: r for r in client.get(f"{API}/runs", headers=h["alice"]).json()["data"]}
    assert [got[i]["queue_position"] for i in ids] == [1, 3, 4]
    # A worker whose one slot runs alice's first run: round 0 took 20 s, 1 of 2 rounds left.
    live_worker(session, "cpu", slots=1)
    first = session.get(Run, uuid.UUID(ids[0]))
    assert first is not None
    token = _claim(session, first)
    session.execute(
        update(Run)
        .where(Run.id == first.id)
        .values(started_at=utcnow() - timedelta(seconds=20), current_round=0)
    )
    session.commit()
    one = client.get(f"{API}/runs/{bob['id']}", headers=h["bob"]).json()
    assert one["queue_position"] == 1  # bob has nothing running: his run is next
    start = datetime.fromisoformat(one["expected_start"])
    # 20 s a round (plus the seconds this test took), 1 round left: about 20 s from now.
    assert timedelta(seconds=15) < start - utcnow() < timedelta(seconds=25)
    running = client.get(f"{API}/runs/{ids[0]}", headers=h["alice"]).json()
    assert (running["queue_position"], running["expected_start"]) == (None, None)
    _finish(session, first, token)


def test_high_priority_is_for_admins_only(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """A user asking for high gets 403 naming `priority`; an admin's high run is first in line."""
    h = {name: {"Authorization": f"Bearer {t}"} for name, t in tokens.items()}
    client.post(f"{API}/runs", json={"spec": {}}, headers=h["alice"])
    denied = client.post(f"{API}/runs", json={"spec": {}, "priority": "high"}, headers=h["alice"])
    assert denied.status_code == 403
    assert "priority" in denied.json()["detail"]
    sweep = client.post(
        f"{API}/sweeps",
        json={"base": {}, "grid": {"seed": [1, 2]}, "priority": "high"},
        headers=h["bob"],
    )
    assert sweep.status_code == 403
    urgent = client.post(f"{API}/runs", json={"spec": {}, "priority": "high"}, headers=h["admin"])
    assert urgent.status_code == 202
    body = client.get(f"{API}/runs/{urgent.json()['id']}", headers=h["admin"]).json()
    assert (body["priority"], body["queue_position"]) == ("high", 1)
    low = client.post(
        f"{API}/runs", json={"spec": {"seed": 4}, "priority": "low"}, headers=h["bob"]
    )
    assert low.json()["queue_position"] == 3
    assert session.query(User).count() == 3
