"""One dispatch pass: send queued runs to free slots, in fair order; re-send lost messages.

The database is the source of truth for what must run. A pass (run by one process at a time,
under the one-row `dispatcher` lease) reads a snapshot of the runs and live workers, and:
- sends as many waiting runs as each queue has free slots (live workers' slots minus runs
  holding a lease minus runs sent and not yet claimed), in `api.fairshare.fair_order`;
- re-sends a run that was sent, is still unclaimed after its back-off (dispatch_timeout_s,
  doubling per send up to dispatch_backoff_max_s) and whose message is missing from the broker
  (fewer messages wait in its queue than runs were sent there), so one run never has two
  messages waiting at once;
- treats a running run whose lease expired like a waiting one (it goes first), and marks
  cancelled such a run whose cancel was asked for;
- given `live` (the workers' loops do; see api.repository.runs.Liveness), also treats as waiting
  a running run whose holder is gone (heartbeat missed twice, no live `workers` row): it stops
  counting against the slots and is sent at once, without waiting for its lease to expire.
A send is recorded (committed) before the message goes out, and undone when the broker
refuses it, so a crash between the two is a lost message the next passes repair.
Workers call this from their dispatch loop (worker/reaper.py); the API calls it once after a
submission so a run starts at once when a slot is free (correctness does not depend on that).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from api.config import Settings
from api.db import db_now
from api.fairshare import Snapshot, Waiting, free_slots, orders
from api.queue import Enqueue
from api.repository import runs as runs_repo

log = logging.getLogger(__name__)

# (queue name) -> messages waiting there; raises when the broker cannot say.
WaitingCount = Callable[[str], int]


@dataclass
class PassReport:
    """What one pass did."""

    locked: bool = False  # another process held the dispatcher lease: nothing done
    sent: list[str] = field(default_factory=list)
    resent: list[str] = field(default_factory=list)
    failed: str | None = None  # the send error that ended the pass early (broker down)


def liveness(settings: Settings) -> runs_repo.Liveness:
    """The rule that declares a run's holder gone, from the lab's settings."""
    return runs_repo.Liveness(heartbeat_s=settings.heartbeat_s, worker_ttl_s=settings.worker_ttl_s)


def backoff_s(settings: Settings, count: int) -> float:
    """How long a run sent `count` times before this send may stay unclaimed before a re-send."""
    return float(
        min(settings.dispatch_timeout_s * 2 ** min(count, 30), settings.dispatch_backoff_max_s)
    )


def plan(
    snap: Snapshot, waiting: WaitingCount | None, queues: set[str] | None = None
) -> tuple[list[Waiting], list[Waiting]]:
    """(re-sends, first sends) of one pass, each in queue order; `waiting=None`: no re-sends."""
    resend: list[Waiting] = []
    new: list[Waiting] = []
    for q, order in sorted(orders(snap).items()):
        if queues is not None and q not in queues:
            continue
        sent = [w for w in order if w.dispatched_at is not None]
        overdue = [w for w in sent if w.next_dispatch_at is None or w.next_dispatch_at <= snap.now]
        if overdue and waiting is not None:
            try:
                missing = len(sent) - waiting(q)
            except Exception as exc:  # noqa: BLE001 - broker unreachable: re-send nothing now
                log.warning("cannot count messages in %s (%s); no re-sends this pass", q, exc)
                missing = 0
            overdue.sort(key=lambda w: (w.dispatched_at or snap.now, str(w.id)))
            resend += overdue[: max(0, missing)]
        unsent = [w for w in order if w.dispatched_at is None]
        new += unsent[: max(0, free_slots(snap, q))]
    return resend, new


def dispatch_pass(
    session: Session,
    send: Enqueue,
    settings: Settings,
    holder: str,
    *,
    waiting: WaitingCount | None = None,
    queues: set[str] | None = None,
    now: datetime | None = None,
    live: runs_repo.Liveness | None = None,
) -> PassReport:
    """Run one pass under the dispatcher lease (commits as it goes); see the module docstring."""
    report = PassReport()
    ttl = max(30.0, 3 * settings.reaper_s)
    if not runs_repo.take_dispatch_lease(session, holder, ttl):
        session.rollback()
        report.locked = True
        return report
    session.commit()
    try:
        # A cancelled run whose worker died needs no worker: it is cancelled, not re-sent.
        runs_repo.cancel_orphans(session, now or db_now(session))
        snap = runs_repo.queue_snapshot(session, settings.worker_ttl_s, now, live)
        session.commit()
        resend, new = plan(snap, waiting, queues)
        for w, again in [(w, True) for w in resend] + [(w, False) for w in new]:
            next_at = snap.now + timedelta(seconds=backoff_s(settings, w.dispatch_count))
            device = runs_repo.mark_dispatched(
                session, w.id, w.dispatch_count, next_at, snap.now, live
            )
            session.commit()
            if device is None:
                continue  # claimed or cancelled meanwhile
            try:
                send(str(w.id), device)
            except Exception as exc:  # noqa: BLE001 - broker down: the run stays waiting, unsent
                runs_repo.unmark_dispatched(session, w.id, w.dispatch_count)
                session.commit()
                report.failed = f"{type(exc).__name__}: {exc}"
                log.warning("could not send run %s (%s); a later pass sends it", w.id, exc)
                break
            if again:
                log.warning(
                    "run %s was sent %d time(s) and not claimed; its message is missing, "
                    "sending it again",
                    w.id,
                    w.dispatch_count,
                )
                report.resent.append(str(w.id))
            else:
                report.sent.append(str(w.id))
    finally:
        session.rollback()
        runs_repo.release_dispatch_lease(session, holder)
        session.commit()
    return report
