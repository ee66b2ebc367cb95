"""Each worker process's dispatch loop: keep its `workers` row alive, and dispatch.

Every FEDGEN_REAPER_S the loop renews the process's rows in `workers` (name, queue, slots,
heartbeat, host, and what it can run: worker.capabilities), then runs one `lab.dispatch.dispatch_pass`, which only one process at a time
performs (the one-row dispatcher lease). That pass sends queued runs to free slots in fair
order, re-sends runs whose message was lost (after a back-off per run) and runs whose lease
expired or whose holder is gone (its worker died: see lab.repository.liveness.Liveness). So an
accepted run reaches a worker after a broker outage, a lost message, a failed send at submission,
exhausted task retries or a killed worker, with no manual step.

Right after this process could not reach the database, a pass does not declare holders gone for
2 x FEDGEN_HEARTBEAT_S: every worker's heartbeats failed during the outage too, and the live ones
must get the time to beat again before their runs are taken from them.

A slot that ends a run does not wait for the next tick: the task calls `nudge_dispatcher`, which
wakes this process's loop for a pass at once, so the slot takes the next queued run (still in
fair order) instead of idling up to FEDGEN_REAPER_S between runs.

The same loop purges the trash (`lab.trash_actions.purge_pass`): runs and sweeps deleted more than
FEDGEN_TRASH_DAYS ago go for good, at most 50 of each per pass, each recorded in the audit log.

`register_worker` is also what a supervisor starting several worker processes (`--slots`)
calls for each of them (each with its own name and 1 slot) if it runs no loop of its own.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time
from datetime import datetime

from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from lab import trash_actions
from lab.config import Settings
from lab.db import session_scope
from lab.dispatch import PassReport, dispatch_pass, liveness
from lab.queue import Sender
from lab.repository import workers as workers_repo
from worker.capabilities import Advertised, host_name

log = logging.getLogger(__name__)
_wakes: set[threading.Event] = set()  # one per dispatch loop of this process


class _Stop(threading.Event):
    """The event that stops a dispatch loop; setting it also wakes the loop from its wait."""

    def __init__(self, wake: threading.Event) -> None:
        super().__init__()
        self._wake = wake

    def set(self) -> None:
        super().set()
        self._wake.set()


def nudge_dispatcher() -> None:
    """Run this process's dispatch pass now rather than at its next tick (a run just ended)."""
    for wake in list(_wakes):
        wake.set()


def register_worker(
    factory: sessionmaker[Session],
    name: str,
    queues: list[str],
    slots: int,
    started_at: datetime | None = None,
    advertised: Advertised | None = None,
) -> datetime:
    """Insert or renew the worker's row for each (full, prefixed) queue name it consumes, with
    what it can run; returns its start time (the database's clock at the first call)."""
    caps = advertised.as_json() if advertised is not None else None
    with session_scope(factory) as s:
        return workers_repo.register(
            s, name, queues, slots, started_at, host=host_name(), capabilities=caps
        )


def unregister_worker(factory: sessionmaker[Session], name: str) -> None:
    """Drop the worker's rows, so its slots stop counting at once (a dead one ages out)."""
    with session_scope(factory) as s:
        workers_repo.unregister(s, name)


def dispatch_once(
    factory: sessionmaker[Session],
    sender: Sender,
    settings: Settings,
    holder: str,
    *,
    find_gone: bool = True,
) -> PassReport:
    """One dispatch pass with the sender's broker (sending and counting waiting messages);
    `find_gone`: also take back runs whose holder is gone."""
    live = liveness(settings) if find_gone else None
    with factory() as s:
        return dispatch_pass(s, sender.send, settings, holder, waiting=sender.waiting, live=live)


def start_dispatcher(
    factory: sessionmaker[Session],
    sender: Sender,
    settings: Settings,
    *,
    name: str,
    queues: list[str],
    slots: int = 1,
    advertised: Advertised | None = None,
) -> threading.Event:
    """A daemon thread: register, then every reaper_s renew the row (with `advertised`, what
    this process can run) and dispatch. Set the event to stop."""
    wake = threading.Event()
    stop = _Stop(wake)
    _wakes.add(wake)
    holder = f"{name}:{socket.gethostname()}:{os.getpid()}"
    started_at: datetime | None = None  # by the database's clock, at the first registration
    last_failure = -float("inf")  # time.monotonic() of the last pass that failed
    last_purge = -float("inf")  # time.monotonic() of the last trash purge

    def tick() -> None:
        nonlocal started_at, last_purge
        started_at = register_worker(factory, name, queues, slots, started_at, advertised)
        settled = time.monotonic() - last_failure >= 2 * settings.heartbeat_s
        report = dispatch_once(factory, sender, settings, holder, find_gone=settled)
        if report.sent or report.resent:
            log.info("dispatched %s, re-sent %s", report.sent, report.resent)
        # Once per FEDGEN_REAPER_S at most, even when a nudge brings the pass sooner.
        if time.monotonic() - last_purge >= settings.reaper_s:
            last_purge = time.monotonic()
            trash_actions.purge_pass(factory, settings)

    def loop() -> None:
        nonlocal last_failure
        while True:
            try:
                tick()
            except OperationalError as exc:  # database down: say so briefly, try next pass
                last_failure = time.monotonic()
                log.warning("dispatch pass skipped: database unavailable (%s)", type(exc).__name__)
            except Exception:  # keep going through any other outage
                last_failure = time.monotonic()
                log.exception("dispatch pass failed")
            wake.wait(settings.reaper_s)
            wake.clear()
            if stop.is_set():
                break
        _wakes.discard(wake)
        try:
            unregister_worker(factory, name)
        except Exception:  # noqa: BLE001 - the row ages out anyway
            log.warning("could not remove worker %s from the workers table", name)

    def on_exit() -> None:
        stop.set()
        try:
            unregister_worker(factory, name)
        except Exception:  # noqa: BLE001 - the row ages out anyway
            pass

    atexit.register(on_exit)
    threading.Thread(target=loop, name="fedgen-dispatch", daemon=True).start()
    return stop
