"""Re-send the task of runs whose worker died (lease expired).

With a 7-day Redis visibility timeout (so hour-long runs are not started twice),
the message of a worker killed with SIGKILL would wait a week; instead every
worker periodically re-sends runs with expired leases. Duplicates are harmless:
the claim lets exactly one delivery run, and it resumes from the last checkpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from api.repository import runs as runs_repo

log = logging.getLogger(__name__)


def reap_once(factory: sessionmaker[Session], send: Callable[[str, str], None]) -> int:
    """Send one task per stale run; returns how many."""
    with factory() as s:
        stale = runs_repo.stale_runs(s)
    for rid, device in stale:
        log.warning("run %s has an expired lease; sending it again", rid)
        send(str(rid), device)
    return len(stale)


def start_reaper(
    factory: sessionmaker[Session], send: Callable[[str, str], None], interval_s: float
) -> threading.Event:
    """A daemon thread calling reap_once every interval; set the returned event to stop it."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval_s):
            try:
                reap_once(factory, send)
            except Exception:  # keep reaping after transient DB/broker errors
                log.exception("reaper pass failed")

    threading.Thread(target=loop, name="fedgen-reaper", daemon=True).start()
    return stop
