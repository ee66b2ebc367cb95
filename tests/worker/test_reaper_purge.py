"""The workers' dispatch loop (worker.reaper.start_dispatcher) also purges the trash: a run
trashed longer than FEDGEN_TRASH_DAYS ago goes on its own, with no command."""

from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.models import AuditEvent, Run, Worker, utcnow
from lab.repository import trash as trash_repo
from tests.support.factories import create_run, create_user
from worker.reaper import start_dispatcher


class _Sender:
    """Stands in for lab.queue.Sender: nothing is queued, nothing is sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def send(self, run_id: str, queue: str) -> None:
        self.sent.append((run_id, queue))

    def waiting(self, queue: str) -> int:  # noqa: ARG002 - the Sender's signature
        return 0


def test_the_dispatch_loop_purges_an_old_trashed_run(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """Trashed 8 days ago (FEDGEN_TRASH_DAYS 7): gone after the loop's first pass, recorded as
    run.purge by system; a run trashed an hour ago stays."""
    user, _ = create_user(session)
    old, young = create_run(session, user), create_run(session, user)
    old_id, young_id = old.id, young.id
    trash_repo.trash_run(session, old_id, "alice", utcnow() - timedelta(days=8))
    trash_repo.trash_run(session, young_id, "alice", utcnow() - timedelta(hours=1))
    session.commit()
    fast = settings.model_copy(update={"reaper_s": 0.05})
    done = threading.Event()

    stop = start_dispatcher(factory, _Sender(), fast, name="purge-test", queues=["cpu"])  # type: ignore[arg-type]
    try:
        # Polled, not timed: the loop runs a pass every 0.05 s; 30 s is only a safety net.
        for _ in range(600):
            with factory() as s:
                if s.get(Run, old_id) is None:
                    done.set()
                    break
            stop.wait(0.05)
    finally:
        stop.set()
        # The loop's last act is to drop its workers row: wait for it, so no pass outlives
        # the test's database.
        for _ in range(600):
            with factory() as s:
                if s.get(Worker, ("purge-test", "cpu")) is None:
                    break
            threading.Event().wait(0.05)

    assert done.is_set()
    session.expire_all()
    assert session.get(Run, young_id) is not None
    purges = session.scalars(select(AuditEvent.subject_id).where(AuditEvent.action == "run.purge"))
    assert list(purges) == [str(old_id)]
