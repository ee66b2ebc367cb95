"""One dispatch pass: send queued runs to free slots, in fair order; re-send lost messages.

The database is the source of truth for what must run. A pass (run by one process at a time,
under the one-row `dispatcher` lease) reads a snapshot of the runs and live workers, and:
- sends each waiting run, in `lab.fairshare.fair_order` per queue, to one live worker that can
  run it (serves its cpu/gpu queue and advertises its dataset: worker.capabilities) and has a
  free slot (its slots minus runs it holds minus runs sent to it and not yet claimed), through
  that worker's own queue (`lab.queue.worker_queue`), so a host without the files never gets
  the run; a run no live worker can load is skipped (it shows a `waiting_reason`) and does not
  hold back the runs behind it;
- re-sends a run that was sent, is still unclaimed after its back-off (dispatch_timeout_s,
  doubling per send up to dispatch_backoff_max_s) and whose message is missing from its
  worker's queue (fewer messages wait there than runs were sent to it), so one run never has
  two messages waiting at once; a run sent to a worker that is gone is sent elsewhere at once;
- treats a running run whose lease expired like a waiting one (it goes first), and marks
  cancelled such a run whose cancel was asked for;
- fails a running run past FEDGEN_MAX_RUN_HOURS, and counts the death of each run whose worker
  died holding it, failing one whose worker died FEDGEN_MAX_ATTEMPTS times in a row
  (lab.repository.run_limits) instead of sending it again;
- given `live` (the workers' loops do; see lab.repository.liveness.Liveness), also treats as waiting
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

from lab.config import Settings
from lab.db import db_now
from lab.fairshare import Snapshot, Waiting, orders
from lab.queue import Enqueue, worker_queue
from lab.repository import dispatch_state, run_limits
from lab.repository.liveness import Liveness

log = logging.getLogger(__name__)

# (queue name, or a worker's name in `plan`) -> messages waiting there; raises when the broker
# cannot say.
WaitingCount = Callable[[str], int]


@dataclass
class PassReport:
    """What one pass did."""

    locked: bool = False  # another process held the dispatcher lease: nothing done
    sent: list[str] = field(default_factory=list)
    resent: list[str] = field(default_factory=list)
    failed: str | None = None  # the send error that ended the pass early (broker down)


def liveness(settings: Settings) -> Liveness:
    """The rule that declares a run's holder gone, from the lab's settings."""
    return Liveness(heartbeat_s=settings.heartbeat_s, worker_ttl_s=settings.worker_ttl_s)


def backoff_s(settings: Settings, count: int) -> float:
    """How long a run sent `count` times before this send may stay unclaimed before a re-send."""
    return float(
        min(settings.dispatch_timeout_s * 2 ** min(count, 30), settings.dispatch_backoff_max_s)
    )


@dataclass(frozen=True)
class Send:
    """One send of a pass: run `run` to worker `to`'s own queue; `why`: 'new' (first send),
    'lost' (its message is missing from `to`'s queue), 'moved' (the worker it was sent to is
    gone, or it was sent before sends named a worker)."""

    run: Waiting
    to: str
    why: str


def _overdue(w: Waiting, now: datetime) -> bool:
    return w.next_dispatch_at is None or w.next_dispatch_at <= now


def plan(
    snap: Snapshot, waiting: WaitingCount | None, queues: set[str] | None = None
) -> list[Send]:
    """The sends of one pass: re-sends of lost messages first, then, queue by queue in fair
    order, each run that needs sending goes to the live worker that can run it (serves its
    queue, loads its dataset) with the most free slots. `waiting`: messages waiting in a
    worker's own queue, by worker name (None: no re-sends)."""
    live = {k.name for k in snap.workers}
    free = {k.name: k.slots for k in snap.workers}
    sent_to: dict[str, list[Waiting]] = {}
    for a in snap.active:
        if a.worker in free:
            free[a.worker] -= 1
    for w in snap.waiting:
        if w.dispatched_at is not None and w.dispatched_to in live:
            free[w.dispatched_to] -= 1
            sent_to.setdefault(w.dispatched_to, []).append(w)
    sends: list[Send] = []
    # A message lost on the way to a live worker: send it to the same worker again, once fewer
    # messages wait in its queue than runs were sent to it (so one is never doubled).
    for name, runs in sorted(sent_to.items()):
        late = [w for w in runs if _overdue(w, snap.now)]
        if not late or waiting is None or (queues is not None and late[0].queue not in queues):
            continue
        try:
            missing = len(runs) - waiting(name)
        except Exception as exc:  # noqa: BLE001 - broker unreachable: re-send nothing now
            log.warning("cannot count messages for worker %s (%s); no re-sends now", name, exc)
            continue
        late.sort(key=lambda w: (w.dispatched_at or snap.now, str(w.id)))
        sends += [Send(w, name, "lost") for w in late[: max(0, missing)]]
    for q, order in sorted(orders(snap).items()):
        if queues is not None and q not in queues:
            continue
        for w in order:
            if w.dispatched_at is None:
                why = "new"
            elif w.dispatched_to is None:
                if not _overdue(w, snap.now):
                    continue  # sent before sends named a worker: give it its back-off
                why = "moved"
            elif w.dispatched_to not in live:
                why = "moved"  # its worker is gone: its message waits in a dead queue
            else:
                continue
            able = [k for k in snap.workers if free[k.name] > 0 and k.can_run(w)]
            if not able:
                continue  # another run behind it may fit a worker that this one cannot use
            best = min(able, key=lambda k: (-free[k.name], k.name))
            free[best.name] -= 1
            sends.append(Send(w, best.name, why))
    return sends


def dispatch_pass(
    session: Session,
    send: Enqueue,
    settings: Settings,
    holder: str,
    *,
    waiting: WaitingCount | None = None,
    queues: set[str] | None = None,
    now: datetime | None = None,
    live: Liveness | None = None,
) -> PassReport:
    """Run one pass under the dispatcher lease (commits as it goes); see the module docstring."""
    report = PassReport()
    ttl = max(30.0, 3 * settings.reaper_s)
    if not dispatch_state.take_dispatch_lease(session, holder, ttl):
        session.rollback()
        report.locked = True
        return report
    session.commit()
    try:
        # A cancelled run whose worker died needs no worker: it is cancelled, not re-sent.
        dispatch_state.cancel_orphans(session, now or db_now(session))
        _end_limited(session, settings, now or db_now(session), live)
        snap = dispatch_state.queue_snapshot(session, settings.worker_ttl_s, now, live)
        session.commit()
        by_worker: WaitingCount | None = None
        if waiting is not None:
            count, prefix = waiting, settings.queue_prefix
            by_worker = lambda name: count(worker_queue(name, prefix))  # noqa: E731

        for item in plan(snap, by_worker, queues):
            w = item.run
            next_at = snap.now + timedelta(seconds=backoff_s(settings, w.dispatch_count))
            if not dispatch_state.mark_dispatched(
                session, w.id, w.dispatch_count, next_at, snap.now, live, to=item.to
            ):
                session.commit()
                continue  # claimed or cancelled meanwhile
            session.commit()
            try:
                send(str(w.id), worker_queue(item.to, settings.queue_prefix))
            except Exception as exc:  # noqa: BLE001 - broker down: the run stays waiting, unsent
                dispatch_state.unmark_dispatched(session, w.id, w.dispatch_count)
                session.commit()
                report.failed = f"{type(exc).__name__}: {exc}"
                log.warning("could not send run %s (%s); a later pass sends it", w.id, exc)
                break
            _record_sent(report, item)
    finally:
        session.rollback()
        dispatch_state.release_dispatch_lease(session, holder)
        session.commit()
    return report


def _end_limited(
    session: Session, settings: Settings, now: datetime, live: Liveness | None
) -> None:
    """Fail, instead of sending again, the runs past a limit (lab.repository.run_limits): run
    longer than FEDGEN_MAX_RUN_HOURS, or whose worker died FEDGEN_MAX_ATTEMPTS times in a row;
    count the death of each other run whose worker died holding it."""
    for rid in run_limits.end_overruns(session, now, settings.max_run_hours):
        log.warning("run %s ran longer than FEDGEN_MAX_RUN_HOURS; failed", rid)
    for rid in run_limits.count_deaths(session, now, live, settings.max_attempts):
        log.warning("run %s: its worker died FEDGEN_MAX_ATTEMPTS times; failed", rid)
    session.commit()


def _record_sent(report: PassReport, item: Send) -> None:
    """Note a sent run in the pass report; a resend (lost message, gone worker) is logged."""
    w = item.run
    if item.why == "lost":
        log.warning(
            "run %s was sent %d time(s) to %s and not claimed; its message is missing, "
            "sending it again",
            w.id,
            w.dispatch_count,
            item.to,
        )
        report.resent.append(str(w.id))
    elif item.why == "moved":
        log.warning("run %s: the worker it was sent to is gone; sent to %s", w.id, item.to)
        report.resent.append(str(w.id))
    else:
        report.sent.append(str(w.id))
