"""DbSink: the runner's Sink that writes each round in one database transaction."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from api.db import session_scope
from api.models import RoundMetrics
from api.repository import metrics as metrics_repo
from api.repository import runs as runs_repo
from api.store import CheckpointStore
from fedgen.events import RoundEvent, RunInfo, RunSummary


class CheckpointWriteFailed(RuntimeError):
    """A round's checkpoint bytes could not be stored (a full or failing disk); nothing of the
    round was written. Transient: the worker resumes the run from its last good checkpoint."""

    def __init__(self, round_: int, cause: BaseException) -> None:
        self.round = round_
        super().__init__(f"checkpoint of round {round_} could not be written: {cause}")


class DbSink:
    """Writes RunInfo, rounds (metrics + users + checkpoints together) and keeps the lease fresh.

    Rounds go through metrics_repo.write_round on one connection held for the run: no pool
    checkout and ping per round. On PostgreSQL a round is a single statement, so the connection
    runs in AUTOCOMMIT (one round trip per round, atomic); elsewhere each round is a transaction.
    """

    def __init__(
        self,
        run_id: uuid.UUID,
        token: str,
        factory: sessionmaker[Session],
        store: CheckpointStore,
        lease_s: float,
    ) -> None:
        self.run_id = run_id
        self.token = token
        self.factory = factory
        self.store = store
        self.lease_s = lease_s
        self.rounds_written = 0
        self.rounds_skipped = 0
        self.summary: RunSummary | None = None
        bind = factory.kw.get("bind")
        if not isinstance(bind, Engine):
            raise TypeError("DbSink needs a sessionmaker bound to an Engine")
        self._engine = bind
        self._conn: Connection | None = None

    def on_start(self, info: RunInfo) -> None:
        """Record partition fingerprint, label histogram, versions and device."""
        with session_scope(self.factory) as s:
            if not runs_repo.record_start(
                s, self.run_id, self.token, info=info.to_dict(), device=info.device
            ):
                raise metrics_repo.LeaseLost(f"run {self.run_id}: lease lost at start")

    def _exists(self, round_: int) -> bool:
        with self.factory() as s:
            stmt = select(RoundMetrics.round).where(
                RoundMetrics.run_id == self.run_id, RoundMetrics.round == round_
            )
            return s.scalar(stmt) is not None

    def on_round(self, event: RoundEvent) -> None:
        """One transaction: metrics row, user rows, checkpoint rows; a replayed round is skipped."""
        ckpts: list[dict[str, Any]] = []
        if event.checkpoints and not self._exists(event.round):
            try:
                for ck in event.checkpoints:
                    sha = ck.sha256
                    path = self.store.put(str(self.run_id), ck.round, ck.kind, sha, ck.data)
                    ckpts.append({"kind": ck.kind, "size": ck.size, "sha256": sha, "path": path})
            except OSError as exc:
                self.store.delete([c["path"] for c in ckpts])
                raise CheckpointWriteFailed(event.round, exc) from exc
        try:
            inserted = self._write(event, ckpts)
        except metrics_repo.LeaseLost:
            raise  # another worker owns the run now and may have written these very paths
        except BaseException:
            # Not written: the files this round put in the store belong to no row.
            self.store.delete([c["path"] for c in ckpts])
            raise
        if inserted:
            self.rounds_written += 1
        else:
            self.rounds_skipped += 1

    def _connection(self) -> Connection:
        if self._conn is None or self._conn.closed or self._conn.invalidated:
            self.close()
            conn = self._engine.connect()
            if self._engine.dialect.name == "postgresql":
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            self._conn = conn
        return self._conn

    def _write(self, event: RoundEvent, ckpts: list[dict[str, Any]]) -> bool:
        for attempt in (0, 1):
            conn = self._connection()
            try:
                with conn.begin():
                    return metrics_repo.write_round(
                        conn,
                        self.run_id,
                        self.token,
                        round_=event.round,
                        metrics=event.metrics,
                        users=event.users,
                        checkpoints=ckpts,
                        lease_s=self.lease_s,
                    )
            except DBAPIError as exc:
                self.close()
                # A connection dropped (server restart, idle kill) between rounds: the round
                # committed whole or not at all and a replay is idempotent, so one retry on a new
                # connection is safe. Any other database error goes up: execute_run hands the
                # lease back and Celery retries the task.
                if attempt or not exc.connection_invalidated:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Return the held connection (if any) to the pool."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already broken; nothing to hand back
                pass

    def on_finish(self, summary: RunSummary) -> None:
        """Keep the summary; execute_run stores it with the end state."""
        self.summary = summary
        self.close()
