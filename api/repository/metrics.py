"""Per-round and per-user metrics: the one-transaction round write and the columnar reads."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import JSON, case, func, select, type_coerce, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.orm import Session

from api.models import CheckpointRow, RoundMetrics, Run, UserMetrics, utcnow


class LeaseLost(RuntimeError):
    """The worker no longer holds the run's lease; it must stop writing."""


def _insert(session: Session, table: Any) -> Any:
    dialect = session.get_bind().dialect.name
    mod = postgresql if dialect == "postgresql" else sqlite
    return mod.insert(table)


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def write_round(
    session: Session,
    run_id: uuid.UUID,
    token: str,
    *,
    round_: int,
    metrics: dict[str, float],
    users: Sequence[dict[str, Any]],
    checkpoints: Sequence[dict[str, Any]],
    lease_s: float,
) -> bool:
    """Write a round's metrics, user rows and checkpoint rows; False if the round was already there.

    Idempotent on (run, round): a replayed round writes nothing and only renews the lease.
    Raises LeaseLost (the caller rolls back) when another worker holds the run.
    """
    now = utcnow()
    clean = {k: f for k, v in metrics.items() if (f := _finite(v)) is not None}
    acc = clean.get("test_acc")
    ins = _insert(session, RoundMetrics).values(
        run_id=run_id, round=round_, test_acc=acc, metrics=clean, created_at=now
    )
    stmt = ins.on_conflict_do_nothing().returning(RoundMetrics.round)
    inserted = session.execute(stmt).scalar() is not None  # rowcount is unreliable here
    values: dict[str, Any] = {"heartbeat_at": now, "lease_expires_at": now + timedelta(seconds=lease_s)}
    if inserted:
        if users:
            rows = [{"run_id": run_id, "round": round_, **u} for u in users]
            session.execute(_insert(session, UserMetrics).on_conflict_do_nothing(), rows)
        for ck in checkpoints:
            stmt = _insert(session, CheckpointRow).values(
                id=uuid.uuid4(), run_id=run_id, round=round_, created_at=now, **ck
            )
            session.execute(stmt.on_conflict_do_nothing())
        values["current_round"] = case(
            (Run.current_round < round_, round_), else_=Run.current_round
        )
        if acc is not None:
            values["last_acc"] = case((Run.current_round < round_, acc), else_=Run.last_acc)
            values["best_acc"] = case(
                (Run.best_acc.is_(None) | (Run.best_acc < acc), acc), else_=Run.best_acc
            )
    upd = (
        update(Run)
        .where(Run.id == run_id, Run.lease_token == token)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if session.execute(upd).rowcount != 1:  # type: ignore[attr-defined]
        raise LeaseLost(f"run {run_id}: lease lost before round {round_} was written")
    return inserted


def round_history(
    session: Session, run_ids: Sequence[uuid.UUID], since_round: int = -1
) -> dict[uuid.UUID, list[tuple[int, dict[str, Any]]]]:
    """(round, metrics) per run, rounds ascending, only rounds > since_round."""
    out: dict[uuid.UUID, list[tuple[int, dict[str, Any]]]] = {i: [] for i in run_ids}
    if not run_ids:
        return out
    if session.get_bind().dialect.name == "postgresql":
        # One JSON array per run, built by the server: 100 rows to parse instead of 20,000.
        agg = func.json_agg(
            aggregate_order_by(func.json_build_array(RoundMetrics.round, RoundMetrics.metrics), RoundMetrics.round)
        )
        pg = (
            select(RoundMetrics.run_id, type_coerce(agg, JSON))
            .where(RoundMetrics.run_id.in_(run_ids), RoundMetrics.round > since_round)
            .group_by(RoundMetrics.run_id)
        )
        for rid, pairs in session.execute(pg):
            out[rid] = [(p[0], p[1]) for p in pairs]
        return out
    stmt = (
        select(RoundMetrics.run_id, RoundMetrics.round, RoundMetrics.metrics)
        .where(RoundMetrics.run_id.in_(run_ids), RoundMetrics.round > since_round)
        .order_by(RoundMetrics.run_id, RoundMetrics.round)
    )
    for rid, rnd, met in session.execute(stmt):
        out[rid].append((rnd, met))
    return out


def acc_curves(session: Session, run_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[float]]:
    """test_acc by round for each run (rounds ascending, missing values left out)."""
    out: dict[uuid.UUID, list[float]] = {i: [] for i in run_ids}
    if not run_ids:
        return out
    stmt = (
        select(RoundMetrics.run_id, RoundMetrics.test_acc)
        .where(RoundMetrics.run_id.in_(run_ids), RoundMetrics.test_acc.is_not(None))
        .order_by(RoundMetrics.run_id, RoundMetrics.round)
    )
    for rid, acc in session.execute(stmt):
        out[rid].append(acc)
    return out


def user_rows(
    session: Session, run_id: uuid.UUID, round_from: int | None, round_to: int | None, limit: int
) -> list[UserMetrics]:
    """Per-user rows of a run in a round range, by (round, user)."""
    stmt = select(UserMetrics).where(UserMetrics.run_id == run_id)
    if round_from is not None:
        stmt = stmt.where(UserMetrics.round >= round_from)
    if round_to is not None:
        stmt = stmt.where(UserMetrics.round <= round_to)
    stmt = stmt.order_by(UserMetrics.round, UserMetrics.user).limit(limit)
    return list(session.scalars(stmt))


def metric_values(
    session: Session, run_ids: Sequence[uuid.UUID], name: str
) -> dict[uuid.UUID, list[float]]:
    """One metric's values over all rounds > 0 of each run (the timing table's input)."""
    out: dict[uuid.UUID, list[float]] = {i: [] for i in run_ids}
    if not run_ids:
        return out
    stmt = select(RoundMetrics.run_id, RoundMetrics.metrics).where(
        RoundMetrics.run_id.in_(run_ids), RoundMetrics.round > 0
    )
    for rid, met in session.execute(stmt):
        v = met.get(name)
        if v is not None:
            out[rid].append(float(v))
    return out
