"""Per-round and per-user metrics: write_round (the one way a round is stored) and the reads.

A round is two rows: its metrics (round_metrics, packed) and all its users' figures packed into one
value (round_users); lab/round_pack.py holds both formats.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Float,
    Integer,
    LargeBinary,
    Uuid,
    bindparam,
    case,
    cast,
    false,
    func,
    or_,
    select,
    true,
    type_coerce,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.orm import Session

from fedgen.events import UserRoundMetrics
from lab.models import CheckpointRow, RoundMetrics, RoundUsers, Run, utcnow
from lab.repository import checkpoints as ckpt_repo
from lab.round_pack import USER_FIELDS, pack_users, unpack_metrics, unpack_users
from vocab.footprint import KEEP_ALL, KeepRule, round_bytes


class LeaseLost(RuntimeError):
    """The worker no longer holds the run's lease; it must stop writing."""


class RoundGap(RuntimeError):
    """Round r - 1 of the run is not in the database, so round r was not written.

    Rounds are written in order, so this happens only when committed rounds were lost (a
    database crash with asynchronous commits loses the last ones): the writer must resume
    from the newest checkpoint the database still has, never write past the hole.
    """

    def __init__(self, run_id: uuid.UUID, round_: int) -> None:
        self.run_id, self.round = run_id, round_
        super().__init__(
            f"run {run_id}: round {round_ - 1} is missing from the database, so round {round_} "
            "was not written (rounds lost in a database crash?)"
        )


_CKPT_FIELDS = ("id", "kind", "size", "sha256", "path")


def _user_values(user: UserRoundMetrics | Mapping[str, Any]) -> tuple[Any, ...]:
    if isinstance(user, UserRoundMetrics):
        return tuple(getattr(user, name) for name in USER_FIELDS)
    if extra := user.keys() - set(USER_FIELDS):
        raise TypeError(f"unexpected user metric keys {sorted(extra)}")
    return tuple(user.get(name) for name in USER_FIELDS)


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _progress(new: ColumnElement[bool], now: Any, expires: Any) -> dict[str, Any]:
    """SET of the run row: renew the lease; if `new` (the round was inserted) advance the run's
    current round, last and best accuracy and add the round's bytes to its stored_bytes (a
    replay, or an older round, leaves them).

    last_acc and best_acc take only a round the protocol counts (`counted_acc`, None for a
    round it does not: fedgen.stats.counts_round), so they are the run's final and best as
    the summary defines them (docs/metrics.md), not a second definition."""
    rnd, acc = bindparam("round", type_=Integer), cast(bindparam("counted_acc"), Float)
    later = new & (Run.current_round < rnd)
    has_acc = new & acc.is_not(None)
    added = cast(bindparam("stored"), BigInteger)
    return {
        "heartbeat_at": now,
        "lease_expires_at": expires,
        # What the new round stores (its rows and checkpoints): the owner's usage, kept in this
        # same UPDATE so a round costs no extra statement (lab/repository/usage.py).
        "stored_bytes": case((new, Run.stored_bytes + added), else_=Run.stored_bytes),
        "current_round": case((later, rnd), else_=Run.current_round),
        "last_acc": case((has_acc & later, acc), else_=Run.last_acc),
        "best_acc": case(
            (has_acc & (Run.best_acc.is_(None) | (Run.best_acc < acc)), acc), else_=Run.best_acc
        ),
    }


def round_columns() -> frozenset[str]:
    """The run row's columns a stored round's UPDATE sets (`_progress`). None of them may be in
    an index of `runs` (an INCLUDE column counts too): on PostgreSQL the round's update then
    stays heap-only (HOT), on the row's own page, instead of a new copy of the whole row and an
    entry in every index of the table each round, which VACUUM frees but never gives back."""
    return frozenset(_progress(true(), func.now(), func.now()))


def _arrays(table: Any, names: Sequence[str], prefix: str) -> Any:
    """unnest() of one array parameter per column (typed like the column): the rows of `table`
    as a set of columns, so any number of rows is one statement with a fixed text."""
    arrays = [cast(bindparam(f"{prefix}{n}"), postgresql.ARRAY(table.c[n].type)) for n in names]
    return func.unnest(*arrays).table_valued(*names).render_derived(name=prefix.rstrip("_"))


@cache
def _pg_statement(with_checkpoints: bool) -> Any:
    """The whole round as one PostgreSQL statement (data-modifying CTEs): one round trip.

    Lock the run if this worker holds its lease; insert the round (ON CONFLICT DO NOTHING makes a
    replay a no-op); insert user and checkpoint rows only when the round row was new; renew the
    lease and advance the run. The CTEs share one snapshot and talk only through RETURNING, so
    `new` is "rm returned a row". A lease mismatch locks, inserts and updates nothing. Most rounds
    carry no checkpoint: their variant has no checkpoint CTE (five array parameters fewer).
    """
    ins = postgresql.insert
    run, rnd = bindparam("run", type_=Uuid), bindparam("round", type_=Integer)
    # The database's clock: a worker host whose clock is off neither steals nor keeps leases.
    now: Any = func.statement_timestamp()
    expires = now + func.make_interval(0, 0, 0, 0, 0, 0, cast(bindparam("lease_s"), Float))
    after = _previous_present(run, rnd)
    lease = (
        select(Run.id)
        .where(Run.id == run, Run.lease_token == bindparam("token"))
        .with_for_update()
        .cte("lease")
    )
    rm = _round_cte(lease, rnd, now, after)
    new = select(rm.c.round).exists()
    users = cast(bindparam("users"), LargeBinary)  # typed: NULL (no users) must be one too
    um = (
        ins(RoundUsers)
        .from_select(
            ["run_id", "round", "data"], select(run, rnd, users).where(new & users.is_not(None))
        )
        .on_conflict_do_nothing()
        .cte("um")
    )
    ctes = [um]
    if with_checkpoints:
        ctes.append(_checkpoint_cte(run, rnd, now, new))
    upd = (
        update(Run)
        .where(Run.id.in_(select(lease.c.id)))
        .values(_progress(new, now, expires))
        .returning(Run.id)
        .cte("upd")
    )
    count = func.count
    return select(
        select(count()).select_from(upd).scalar_subquery(),
        select(count()).select_from(rm).scalar_subquery(),
        after,
    ).add_cte(*ctes)


def _round_cte(lease: Any, rnd: Any, now: Any, after: Any) -> Any:
    """Insert the round row if this worker holds the lease and the previous round is stored;
    RETURNING its round only when the row is new (a replay returns nothing)."""
    return (
        postgresql.insert(RoundMetrics)
        .from_select(
            ["run_id", "round", "test_acc", "metrics", "created_at"],
            select(
                lease.c.id,
                rnd,
                cast(bindparam("acc"), Float),
                bindparam("metrics", type_=RoundMetrics.metrics.type),
                now,
            ).where(after),
        )
        .on_conflict_do_nothing()
        .returning(RoundMetrics.round)
        .cte("rm")
    )


def _checkpoint_cte(run: Any, rnd: Any, now: Any, new: Any) -> Any:
    """Insert the round's checkpoint chunks when the round row was new."""
    cks = _arrays(CheckpointRow.__table__, _CKPT_FIELDS, "c_")
    return (
        postgresql.insert(CheckpointRow)
        .from_select(
            ["run_id", "round", "created_at", *_CKPT_FIELDS],
            select(run, rnd, now, *cks.c).where(new),
        )
        .on_conflict_do_nothing()
        .cte("ck")
    )


def _previous_present(run: Any, rnd: Any) -> ColumnElement[bool]:
    """True when round `rnd` may be written: it is round 0, or round rnd - 1 is stored."""
    prev = select(RoundMetrics.round).where(
        RoundMetrics.run_id == run, RoundMetrics.round == rnd - 1
    )
    return or_(rnd == 0, prev.exists())


@cache
def _sqlite_statements() -> tuple[Any, ...]:
    """The same steps one statement at a time, for SQLite (no data-modifying CTEs; in-process, so
    several statements cost no round trips). The caller's transaction makes them atomic."""
    ins = sqlite.insert
    lease = Run.id == bindparam("run"), Run.lease_token == bindparam("token")
    run, rnd = bindparam("run_id", type_=Uuid), bindparam("round", type_=Integer)
    return (
        select(_previous_present(run, rnd)),
        ins(RoundMetrics).on_conflict_do_nothing().returning(RoundMetrics.round),
        ins(RoundUsers).on_conflict_do_nothing(),
        ins(CheckpointRow).on_conflict_do_nothing(),
        # a replay renews the lease only; SQLite is one host: the process's clock is the database's
        update(Run)
        .where(*lease)
        .values(_progress(false(), bindparam("now"), bindparam("expires"))),
        update(Run).where(*lease).values(_progress(true(), bindparam("now"), bindparam("expires"))),
    )


def write_round(
    db: Session | Connection,
    run_id: uuid.UUID,
    token: str,
    *,
    round_: int,
    metrics: Mapping[str, float],
    users: Sequence[UserRoundMetrics | Mapping[str, Any]],
    checkpoints: Sequence[Mapping[str, Any]],
    lease_s: float,
    keep_full: int = 2,
    keep_generator: KeepRule = KEEP_ALL,
    counted: bool = True,
) -> bool:
    """Write a round's metrics, user rows and checkpoints; False if the round was already there.

    The one way a round is stored. `checkpoints`: mappings of kind, size, sha256 and data (the
    bytes, stored in chunk rows) or path (a file in the store, tests of legacy rows). When the
    round is new its checkpoints' bytes are stored with it, and of its 'full' checkpoints only
    the newest `keep_full` are kept, of its generator ones those `keep_generator` keeps
    (lab/checkpoint_retention.py). Runs in the caller's transaction (a Session, or a Connection
    in a transaction; a round without checkpoints may also go through a Connection in AUTOCOMMIT:
    on PostgreSQL it is then one statement, atomic either way).
    Idempotent on (run, round): a replayed round writes nothing and only renews the lease. Metrics
    that are not finite numbers are dropped. Raises LeaseLost (nothing was written; the caller
    rolls back) when this worker no longer holds the run's lease, and RoundGap (nothing written)
    when round_ - 1 is not stored: a run's rounds are always 0..r with no hole.
    `counted`: whether the run's protocol counts this round (fedgen.stats.counts_round); a
    round it does not count is stored but leaves the run's last_acc and best_acc.
    """
    conn = db.connection() if isinstance(db, Session) else db
    now = utcnow()
    clean = {k: f for k, v in metrics.items() if (f := _finite(v)) is not None}
    user_rows = [_user_values(u) for u in users]
    ck_ids = [uuid.uuid4() for _ in checkpoints]
    ck_rows = [
        (cid, *(c.get(n) for n in _CKPT_FIELDS[1:]))
        for cid, c in zip(ck_ids, checkpoints, strict=True)
    ]
    params: dict[str, Any] = {
        "run": run_id,
        "token": token,
        "round": round_,
        "acc": clean.get("test_acc"),
        "counted_acc": clean.get("test_acc") if counted else None,
        "metrics": clean,
        # every user's figures as one value (None: the round has no users, so no row)
        "users": pack_users(user_rows) if user_rows else None,
        "stored": round_bytes(len(user_rows)) + sum(int(c.get("size") or 0) for c in checkpoints),
    }
    if conn.dialect.name != "sqlite":
        held, inserted, in_order = _write_pg(conn, params, lease_s, ck_rows)
    else:
        held, inserted, in_order = _write_sqlite(conn, params, now, lease_s, ck_rows)
    if held != 1:
        raise LeaseLost(f"run {run_id}: lease lost before round {round_} was written")
    if not in_order:
        raise RoundGap(run_id, round_)
    if inserted and ck_rows:
        blobs = [(cid, c.get("data")) for cid, c in zip(ck_ids, checkpoints, strict=True)]
        ckpt_repo.insert_chunks(conn, [(cid, data) for cid, data in blobs if data is not None])
        if any(c["kind"] == "full" for c in checkpoints):
            ckpt_repo.prune_full(conn, run_id, keep_full)
        if any(c["kind"] == "generator" for c in checkpoints):
            ckpt_repo.prune_generators(conn, run_id, keep_generator)
    return bool(inserted)


def _write_pg(
    conn: Connection,
    params: dict[str, Any],
    lease_s: float,
    ck_rows: list[tuple[Any, ...]],
) -> tuple[int, bool, bool]:
    """The round as one PostgreSQL statement: (lease rows held, round inserted, in order)."""
    params = {**params, "lease_s": float(lease_s)}
    if ck_rows:
        columns = list(zip(*ck_rows, strict=True))
        params |= {f"c_{n}": list(col) for n, col in zip(_CKPT_FIELDS, columns, strict=True)}
    held, inserted, in_order = conn.execute(_pg_statement(bool(ck_rows)), params).one()
    return held, bool(inserted), bool(in_order)


def _write_sqlite(
    conn: Connection,
    params: dict[str, Any],
    now: datetime,
    lease_s: float,
    ck_rows: list[tuple[Any, ...]],
) -> tuple[int, bool, bool]:
    """The round as SQLite statements in the caller's transaction: same result as _write_pg."""
    params = {**params, "now": now, "expires": now + timedelta(seconds=lease_s)}
    previous, round_ins, users_ins, ckpt_ins, *renew = _sqlite_statements()
    key = {"run_id": params["run"], "round": params["round"]}
    row = {**key, "test_acc": params["acc"], "metrics": params["metrics"], "created_at": now}
    in_order = bool(conn.execute(previous, key).scalar())
    inserted = in_order and conn.execute(round_ins, row).first() is not None  # rowcount lies
    if inserted and params["users"] is not None:
        conn.execute(users_ins, {**key, "data": params["users"]})
    if inserted and ck_rows:
        rows = [
            {**key, "created_at": now, **dict(zip(_CKPT_FIELDS, c, strict=True))} for c in ck_rows
        ]
        conn.execute(ckpt_ins, rows)
    held = conn.execute(renew[inserted], params).rowcount
    return held, inserted, in_order


def missing_rounds(session: Session, run_id: uuid.UUID, last: int) -> list[int]:
    """Rounds of 0..last that are not stored for the run (a succeeded run has none)."""
    stored = set(
        session.scalars(
            select(RoundMetrics.round).where(
                RoundMetrics.run_id == run_id, RoundMetrics.round.between(0, last)
            )
        )
    )
    return [r for r in range(last + 1) if r not in stored]


def round_history(
    session: Session, run_ids: Sequence[uuid.UUID], since_round: int = -1
) -> dict[uuid.UUID, list[tuple[int, dict[str, Any]]]]:
    """(round, metrics) per run, rounds ascending, only rounds > since_round."""
    out: dict[uuid.UUID, list[tuple[int, dict[str, Any]]]] = {i: [] for i in run_ids}
    if not run_ids:
        return out
    if session.get_bind().dialect.name == "postgresql":
        # Per run: the rounds and the packed metrics as two arrays, unpacked here: 100 rows
        # instead of 20,000 and nothing built server-side.
        packed = type_coerce(RoundMetrics.metrics, LargeBinary)
        pg = (
            select(
                RoundMetrics.run_id,
                func.array_agg(aggregate_order_by(RoundMetrics.round, RoundMetrics.round)),
                func.array_agg(
                    aggregate_order_by(packed, RoundMetrics.round),
                    type_=postgresql.ARRAY(LargeBinary),
                ),
            )
            .where(RoundMetrics.run_id.in_(run_ids), RoundMetrics.round > since_round)
            .group_by(RoundMetrics.run_id)
        )
        for rid, rounds, blobs in session.execute(pg):
            metrics = [unpack_metrics(bytes(b)) for b in blobs]
            out[rid] = list(zip(rounds, metrics, strict=True))
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
    if session.get_bind().dialect.name == "postgresql":
        # One array per run: a 1,000-run sweep's 201,000 rows cost seconds as rows (each row's
        # uuid and float converted and looped over in Python), a tenth of that as arrays.
        per_run = (
            select(
                RoundMetrics.run_id,
                func.array_agg(aggregate_order_by(RoundMetrics.test_acc, RoundMetrics.round)),
            )
            .where(RoundMetrics.run_id.in_(run_ids), RoundMetrics.test_acc.is_not(None))
            .group_by(RoundMetrics.run_id)
        )
        for rid, accs in session.execute(per_run):
            out[rid] = [a for a in accs if a is not None]
        return out
    stmt = (
        select(RoundMetrics.run_id, RoundMetrics.test_acc)
        .where(RoundMetrics.run_id.in_(run_ids), RoundMetrics.test_acc.is_not(None))
        .order_by(RoundMetrics.run_id, RoundMetrics.round)
    )
    for rid, acc in session.execute(stmt):
        if acc is not None:  # never, by the WHERE; the column's type allows it
            out[rid].append(acc)
    return out


def user_rows(
    session: Session, run_id: uuid.UUID, round_from: int | None, round_to: int | None, limit: int
) -> list[dict[str, Any]]:
    """Per-user figures of a run in a round range, by (round, user): at most `limit` of them,
    each a dict of `round` and the UserRoundMetrics fields."""
    stmt = select(RoundUsers.round, RoundUsers.data).where(RoundUsers.run_id == run_id)
    if round_from is not None:
        stmt = stmt.where(RoundUsers.round >= round_from)
    if round_to is not None:
        stmt = stmt.where(RoundUsers.round <= round_to)
    out: list[dict[str, Any]] = []
    # Rounds are read in pages: a limit of rows is reached without unpacking the whole run.
    for rnd, data in session.execute(
        stmt.order_by(RoundUsers.round).execution_options(yield_per=64)
    ):
        users = sorted(unpack_users(data), key=lambda u: u.user)
        # Shallow: the fields are plain numbers, and asdict's deep copy was most of the time
        # of a 20-user run's 4,020 rows.
        out.extend(
            {"round": rnd, **{f: getattr(u, f) for f in USER_FIELDS}}
            for u in users[: limit - len(out)]
        )
        if len(out) >= limit:
            break
    return out


def val_curves(session: Session, run_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[float]]:
    """val_acc by round for each run, index = round (NaN where a round has none; an empty list
    for a run without validation data): what `fedgen.stats.val_best` reads beside test_acc."""
    curves = {i: c["val_acc"] for i, c in metric_curves(session, run_ids, ["val_acc"]).items()}
    return {i: (c if any(not math.isnan(v) for v in c) else []) for i, c in curves.items()}


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


def metric_curves(
    session: Session, run_ids: Sequence[uuid.UUID], names: Sequence[str]
) -> dict[uuid.UUID, dict[str, list[float]]]:
    """Each named metric by round for each run, index = round (NaN where a round lacks it):
    the validation curves and the cost figures a sweep summary reads in one pass."""
    out: dict[uuid.UUID, dict[str, list[float]]] = {i: {n: [] for n in names} for i in run_ids}
    if not run_ids:
        return out
    stmt = (
        select(RoundMetrics.run_id, RoundMetrics.round, RoundMetrics.metrics)
        .where(RoundMetrics.run_id.in_(run_ids))
        .order_by(RoundMetrics.run_id, RoundMetrics.round)
    )
    for rid, rnd, met in session.execute(stmt):
        for name, curve in out[rid].items():
            v = met.get(name) if met else None
            curve.extend([math.nan] * (rnd - len(curve)))
            curve.append(math.nan if v is None else float(v))
    return out
