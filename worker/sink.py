"""DbSink: the runner's Sink that writes each round, its checkpoints included, in one database
transaction."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from fedgen.events import RoundEvent, RunInfo, RunSummary
from fedgen.stats import counts_round
from lab.db import session_scope
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from vocab.footprint import KEEP_ALL, KeepRule


class CheckpointWriteFailed(RuntimeError):
    """A round's checkpoint bytes could not be stored (the database's disk is full); nothing of
    the round was written. Transient: the worker resumes the run from its last good checkpoint."""

    def __init__(self, round_: int, cause: BaseException) -> None:
        self.round = round_
        first = (str(cause).strip().splitlines() or [""])[0]
        super().__init__(f"checkpoint of round {round_} could not be stored: {first}")


def is_disk_full(exc: BaseException) -> bool:
    """The database refused a write for lack of space (Postgres 53100, SQLite SQLITE_FULL)."""
    orig = getattr(exc, "orig", exc)
    if getattr(orig, "sqlstate", None) == "53100":
        return True
    return "database or disk is full" in str(orig) or "No space left on device" in str(orig)


class DbSink:
    """Writes RunInfo, rounds (metrics + users + checkpoints together) and keeps the lease fresh.

    Rounds go through metrics_repo.write_round on one connection held for the run: no pool
    checkout and ping per round. On PostgreSQL a round without checkpoints is a single
    statement, so the connection runs in AUTOCOMMIT (one round trip per round, atomic); a round
    with checkpoints (their bytes go into the database with it) is a transaction on a pooled
    connection; on SQLite every round is a transaction.
    """

    def __init__(
        self,
        run_id: uuid.UUID,
        token: str,
        factory: sessionmaker[Session],
        lease_s: float,
        keep_full: int = 2,
        keep_generator: KeepRule = KEEP_ALL,
        rounds: int | None = None,
    ) -> None:
        self.run_id = run_id
        # The run's R and protocol (from on_start's fidelity): which rounds its row's last_acc
        # and best_acc may take (fedgen.stats.counts_round); without R every round counts.
        self.rounds = rounds
        self.eval_timing = "after_aggregation"
        self.token = token
        self.factory = factory
        self.lease_s = lease_s
        self.keep_full = keep_full
        self.keep_generator = keep_generator
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
        self.eval_timing = str(info.fidelity.get("eval_timing", "after_aggregation"))
        with session_scope(self.factory) as s:
            if not runs_repo.record_start(
                s, self.run_id, self.token, info=info.to_dict(), device=info.device
            ):
                raise metrics_repo.LeaseLost(f"run {self.run_id}: lease lost at start")

    def on_round(self, event: RoundEvent) -> None:
        """One transaction: metrics row, user rows, checkpoints; a replayed round is skipped."""
        ckpts = [
            {"kind": ck.kind, "size": ck.size, "sha256": ck.sha256, "data": ck.data}
            for ck in event.checkpoints
        ]
        try:
            inserted = self._write(event, ckpts)
        except DBAPIError as exc:
            if ckpts and is_disk_full(exc):
                raise CheckpointWriteFailed(event.round, exc) from exc
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
        pg = self._engine.dialect.name == "postgresql"
        for attempt in (0, 1):
            try:
                if ckpts and pg:
                    with self._engine.begin() as conn:
                        return self._write_on(conn, event, ckpts)
                conn = self._connection()
                with conn.begin():
                    return self._write_on(conn, event, ckpts)
            except DBAPIError as exc:
                self.close()
                # A connection dropped (server restart, idle kill) between rounds: the round
                # committed whole or not at all and a replay is idempotent, so one retry on a new
                # connection is safe. Any other database error goes up: execute_run hands the
                # lease back and Celery retries the task.
                if attempt or not exc.connection_invalidated:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _write_on(self, conn: Connection, event: RoundEvent, ckpts: list[dict[str, Any]]) -> bool:
        return metrics_repo.write_round(
            conn,
            self.run_id,
            self.token,
            round_=event.round,
            metrics=event.metrics,
            users=event.users,
            checkpoints=ckpts,
            lease_s=self.lease_s,
            keep_full=self.keep_full,
            keep_generator=self.keep_generator,
            counted=self.rounds is None or counts_round(event.round, self.eval_timing, self.rounds),
        )

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
