"""Worker hosts whose clocks are 5 minutes off (Postgres): no lease stolen, none kept past expiry.

Each "host" is this process with its clock shifted (every Python clock the lease code could
read: lab.models.utcnow, datetime.now in lab.db, and the modules' own imports of them). Leases,
heartbeats and the dispatcher are timed by the database's clock, so the shift changes nothing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from sqlalchemy.orm import Session

import lab.db
import lab.models
from lab.config import Settings
from lab.dispatch import dispatch_pass, liveness
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from lab.repository import workers as workers_repo
from tests.support.factories import create_run, create_user

pytestmark = pytest.mark.postgres
T = TypeVar("T")
SKEW = timedelta(minutes=5)


@pytest.fixture
def pg_session(pg_url: str) -> Iterator[Session]:
    from tests.support.postgres import truncate

    engine = lab.db.make_engine(pg_url, pool_size=2)
    with lab.db.make_sessionmaker(engine)() as s:
        yield s
    truncate(engine)
    engine.dispose()


@contextmanager
def host_clock(monkeypatch: pytest.MonkeyPatch, offset: timedelta) -> Iterator[None]:
    """This process's clocks shifted by `offset` while inside."""

    def shifted() -> datetime:
        return datetime.now(UTC) + offset

    class ShiftedDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return shifted() if tz is not None else (shifted().replace(tzinfo=None))

    with monkeypatch.context() as m:
        m.setattr(lab.models, "utcnow", shifted)
        m.setattr(lab.db, "datetime", ShiftedDatetime, raising=False)
        for module in (runs_repo, workers_repo, metrics_repo):
            if hasattr(module, "utcnow"):
                m.setattr(module, "utcnow", shifted)
        yield


def on(monkeypatch: pytest.MonkeyPatch, offset: timedelta, fn: Callable[[], T]) -> T:
    with host_clock(monkeypatch, offset):
        return fn()


def _claim(s: Session, rid: uuid.UUID, worker: str, lease_s: float, live: Any = None) -> bool:
    ok = runs_repo.claim(
        s, rid, worker=worker, token=worker, device="cpu", lease_s=lease_s, live=live
    )
    s.commit()
    return ok


@pytest.mark.parametrize("skew", [SKEW, -SKEW])
def test_no_lease_is_stolen(
    pg_session: Session, pg_url: str, monkeypatch: pytest.MonkeyPatch, skew: timedelta
) -> None:
    """A holds a 60 s lease (and renews it through a round); B, 5 minutes off, can neither
    claim the run nor see it as waiting in a dispatch pass."""
    s = pg_session
    user, _ = create_user(s)
    run = create_run(s, user)
    settings = Settings(database_url=pg_url, heartbeat_s=20.0)
    live = liveness(settings)
    assert on(monkeypatch, -skew, lambda: _claim(s, run.id, "A", 60))
    on(monkeypatch, -skew, lambda: workers_repo.register(s, "A", ["cpu"], 1))
    on(
        monkeypatch,
        -skew,
        lambda: metrics_repo.write_round(
            s, run.id, "A", round_=0, metrics={}, users=[], checkpoints=[], lease_s=60
        ),
    )
    s.commit()
    assert not on(monkeypatch, skew, lambda: _claim(s, run.id, "B", 60, live))
    sent: list[str] = []
    report = on(
        monkeypatch,
        skew,
        lambda: dispatch_pass(s, lambda rid, _d: sent.append(rid), settings, "B", live=live),
    )
    assert sent == []
    assert report.sent == []


@pytest.mark.parametrize("skew", [SKEW, -SKEW])
def test_no_lease_is_kept_past_expiry(
    pg_session: Session, monkeypatch: pytest.MonkeyPatch, skew: timedelta
) -> None:
    """A takes a 3 s lease on a clock 5 minutes off and stops renewing it: once 3 s have passed,
    B (another clock) claims the run; not before."""
    s = pg_session
    user, _ = create_user(s)
    run = create_run(s, user)
    assert on(monkeypatch, skew, lambda: _claim(s, run.id, "A", 3))
    assert not on(monkeypatch, -skew, lambda: _claim(s, run.id, "B", 60))
    time.sleep(3.5)
    assert on(monkeypatch, -skew, lambda: _claim(s, run.id, "B", 60))
