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


class DbSink:
    """Writes RunInfo, rounds (metrics + users + checkpoints together) and keeps the lease fresh."""

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
        # Postgres/psycopg: rounds go through one held AUTOCOMMIT connection, each round a single
        # atomic statement (metrics_repo.write_round_pg): one round-trip instead of pool checkout,
        # ping, BEGIN, 3 statements and COMMIT.
        self._engine: Engine | None = (
            bind if isinstance(bind, Engine) and metrics_repo.pg_fast_path(bind) else None
        )
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
            for ck in event.checkpoints:
                sha = ck.sha256
                path = self.store.put(str(self.run_id), ck.round, ck.kind, sha, ck.data)
                ckpts.append({"kind": ck.kind, "size": ck.size, "sha256": sha, "path": path})
        users = [
            {
                "user": u.user,
                "test_acc": u.test_acc,
                "test_loss": u.test_loss,
                "num_test": u.num_test,
                "selected": u.selected,
                "train_ms": u.train_ms,
                "train_loss": u.train_loss,
            }
            for u in event.users
        ]
        try:
            inserted = self._write(event.round, event.metrics, users, ckpts)
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

    def _write(
        self,
        round_: int,
        metrics: dict[str, float],
        users: list[dict[str, Any]],
        ckpts: list[dict[str, Any]],
    ) -> bool:
        row: dict[str, Any] = {
            "round_": round_,
            "metrics": metrics,
            "users": users,
            "checkpoints": ckpts,
            "lease_s": self.lease_s,
        }
        if self._engine is None:
            with session_scope(self.factory) as s:
                return metrics_repo.write_round(s, self.run_id, self.token, **row)
        for attempt in (0, 1):
            if self._conn is None or self._conn.closed or self._conn.invalidated:
                self.close()
                self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            try:
                return metrics_repo.write_round_pg(self._conn, self.run_id, self.token, **row)
            except DBAPIError as exc:
                self.close()
                # A dropped connection (server restart, idle kill): the statement either committed
                # whole or not at all, and a replay is idempotent, so one retry is safe.
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
