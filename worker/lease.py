"""Lease: keeps a claimed run's lease alive from a thread while the run computes.

A long round must never look like a dead worker, so renewal does not wait for the round loop;
each renewal also stores what the run has cost so far, so a live run shows it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.db import is_unavailable, session_scope
from lab.repository import runs as runs_repo

log = logging.getLogger(__name__)


class Lease:
    """Renews the lease from a thread, so a long round never looks like a dead worker; each
    renewal also stores what the run has cost so far (`cost`), so a live run shows it.
    `lost` is set once a renewal finds the lease no longer this worker's."""

    def __init__(
        self,
        run_id: uuid.UUID,
        token: str,
        factory: sessionmaker[Session],
        s: Settings,
        cost: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.run_id, self.token, self.factory, self.settings = run_id, token, factory, s
        self.cost = cost
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-{run_id}", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_s):
            try:
                with session_scope(self.factory) as s:
                    cost = self.cost() if self.cost is not None else None
                    ok = runs_repo.heartbeat(
                        s, self.run_id, self.token, self.settings.lease_s, cost=cost
                    )
            except Exception as exc:  # keep trying: an outage must not end the heartbeats
                if is_unavailable(exc):
                    log.warning("heartbeat of run %s failed (database unavailable)", self.run_id)
                else:
                    log.exception("heartbeat of run %s failed", self.run_id)
                continue
            if not ok:
                self.lost.set()
                return

    def __enter__(self) -> Lease:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
