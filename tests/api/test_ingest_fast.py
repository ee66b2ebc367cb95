"""write_round (one statement on Postgres, statement by statement on SQLite), DbSink, downsampler."""

from __future__ import annotations

import hashlib
import random
import shutil
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from fedgen.events import Checkpoint, RoundEvent, UserRoundMetrics
from lab.db import make_engine, make_sessionmaker
from lab.downsample import _downsample_python, downsample, to_columns
from lab.models import CheckpointChunk, CheckpointRow, RoundMetrics, Run
from lab.repository import checkpoints as ckpt_repo
from lab.repository import metrics as metrics_repo
from lab.round_pack import USER_FIELDS, USERS_V1
from tests.support import factories as f
from worker.sink import DbSink

USERS = [
    {
        "user": u,
        "test_acc": 0.5 + u / 100,
        "test_loss": 1.0 - u / 100,
        "num_test": 10 + u,
        "selected": u % 2 == 0,
        "train_ms": None if u == 3 else 12.5 * u,
        "train_loss": None if u == 4 else 0.3,
    }
    for u in range(20)
]
CKPTS = [
    {"kind": "full", "size": 123, "sha256": "a" * 64, "path": "x/full"},
    {"kind": "model", "size": 45, "sha256": "b" * 64, "path": "x/model"},
]


def _leased_run(session: Session, token: str = "tok") -> uuid.UUID:
    user, _ = f.create_user(session, f"u{uuid.uuid4().hex[:6]}")
    run = f.create_run(session, user)
    session.execute(update(Run).where(Run.id == run.id).values(lease_token=token, status="running"))
    session.commit()
    return run.id


def _snapshot(session: Session, rid: uuid.UUID) -> dict:
    session.expire_all()
    rms = session.execute(
        select(RoundMetrics.round, RoundMetrics.test_acc, RoundMetrics.metrics)
        .where(RoundMetrics.run_id == rid)
        .order_by(RoundMetrics.round)
    ).all()
    ums = [tuple(u.values()) for u in metrics_repo.user_rows(session, rid, None, None, 10**6)]
    cks = session.execute(
        select(
            CheckpointRow.round,
            CheckpointRow.kind,
            CheckpointRow.size,
            CheckpointRow.sha256,
            CheckpointRow.path,
        )
        .where(CheckpointRow.run_id == rid)
        .order_by(CheckpointRow.round, CheckpointRow.kind)
    ).all()
    run = session.execute(
        select(Run.current_round, Run.last_acc, Run.best_acc).where(Run.id == rid)
    ).one()
    return {
        "rounds": [tuple(r) for r in rms],
        "users": [tuple(r) for r in ums],
        "ckpts": [tuple(r) for r in cks],
        "run": tuple(run),
    }


def _write(
    session: Session, rid: uuid.UUID, r: int, acc: float | None, *, token: str = "tok"
) -> bool:
    metrics = {"test_acc": acc, "loss": 1.5, "bad": float("nan"), "lr": 0.01}
    ck = CKPTS if r % 2 == 0 else []
    out = metrics_repo.write_round(
        session, rid, token, round_=r, metrics=metrics, users=USERS, checkpoints=ck, lease_s=60
    )
    session.commit()
    return out


ACCS = [0.3, 0.5, None, 0.4, 0.6]


def test_write_round_same_rows_on_both_dialects(
    session: Session, sqlite_template: Path, tmp_path: Path
) -> None:
    """write_round stores the same rows here as in a SQLite database (Postgres: one statement)."""
    path = tmp_path / "other.db"
    shutil.copy(sqlite_template, path)
    other = make_engine(f"sqlite:///{path}")
    with make_sessionmaker(other)() as lite:
        a, b = _leased_run(session), _leased_run(lite)
        for r, acc in enumerate(ACCS):
            assert _write(session, a, r, acc) is True
            assert _write(lite, b, r, acc) is True
        sa, sb = _snapshot(session, a), _snapshot(lite, b)
    other.dispose()
    assert sa == sb
    assert len(sa["users"]) == 20 * len(ACCS)
    assert len(sa["ckpts"]) == 5  # 3 model + the newest 2 of 3 full (keep_full=2)
    assert sa["rounds"][0][2] == {"test_acc": 0.3, "loss": 1.5, "lr": 0.01}  # NaN dropped
    assert sa["run"] == (4, 0.6, 0.6)


def test_replay_is_idempotent_and_renews_lease(session: Session) -> None:
    rid = _leased_run(session)
    for r, acc in enumerate(ACCS[:3]):
        _write(session, rid, r, acc)
    before = _snapshot(session, rid)
    hb0 = session.execute(select(Run.heartbeat_at).where(Run.id == rid)).scalar_one()
    assert _write(session, rid, 1, 0.99) is False  # replay with a different value writes nothing
    assert _write(session, rid, 0, 0.99) is False
    assert _snapshot(session, rid) == before
    session.expire_all()
    assert session.execute(select(Run.heartbeat_at).where(Run.id == rid)).scalar_one() >= hb0


def test_lease_mismatch_writes_nothing(session: Session) -> None:
    rid = _leased_run(session)
    _write(session, rid, 0, 0.3)
    before = _snapshot(session, rid)
    with pytest.raises(metrics_repo.LeaseLost):
        metrics_repo.write_round(
            session,
            rid,
            "other",
            round_=1,
            metrics={"test_acc": 0.9},
            users=USERS,
            checkpoints=CKPTS,
            lease_s=60,
        )
    session.rollback()
    assert _snapshot(session, rid) == before


def _event(r: int) -> RoundEvent:
    users = [UserRoundMetrics(u, 0.5, 1.0, 100, u % 2 == 0, 12.5, 0.3) for u in range(20)]
    cks = [Checkpoint("full", r, b"abc")] if r % 2 == 0 else []
    return RoundEvent(r, {"test_acc": 0.1 * r, "test_loss": 1.0}, users, cks)


def test_user_fields_are_packed_columns() -> None:
    """Every UserRoundMetrics field is a column of the packed users' format (a new field needs
    a new version of it, lab/round_pack.py)."""
    assert set(USER_FIELDS) == {"user"} | {name for name, _ in USERS_V1}


def test_sink_writes_dataclass_users(
    factory: sessionmaker[Session], session: Session, tmp_path: Path
) -> None:
    """DbSink stores each UserRoundMetrics field as it is, None included."""
    rid = _leased_run(session)
    users = [
        UserRoundMetrics(0, 0.25, 2.0, 7, False),
        UserRoundMetrics(1, 0.75, 0.5, 9, True, 3.5, 0.1),
    ]
    sink = DbSink(rid, "tok", factory, lease_s=60)
    sink.on_round(RoundEvent(0, {"test_acc": 0.5}, users))
    sink.close()
    assert _snapshot(session, rid)["users"] == [
        (0, 0, 0.25, 2.0, 7, False, None, None),
        (0, 1, 0.75, 0.5, 9, True, 3.5, 0.1),
    ]


def test_sink_held_connection_exactly_once(
    factory: sessionmaker[Session], session: Session, tmp_path: Path
) -> None:
    """DbSink (held AUTOCOMMIT connection on Postgres) writes each round once, replays are skipped."""
    rid = _leased_run(session)
    sink = DbSink(rid, "tok", factory, lease_s=60)
    for r in range(4):
        sink.on_round(_event(r))
    sink.on_round(_event(2))  # replay
    assert (sink.rounds_written, sink.rounds_skipped) == (4, 1)
    snap = _snapshot(session, rid)
    assert [r[0] for r in snap["rounds"]] == [0, 1, 2, 3]
    assert len(snap["users"]) == 80
    assert [c[:2] for c in snap["ckpts"]] == [(0, "full"), (2, "full")]
    assert snap["run"][0] == 3
    # another worker takes the lease: the next round raises and writes nothing
    session.execute(update(Run).where(Run.id == rid).values(lease_token="thief"))
    session.commit()
    with pytest.raises(metrics_repo.LeaseLost):
        sink.on_round(_event(4))
    assert _snapshot(session, rid) == snap
    sink.close()
    sink.close()  # idempotent


def test_sink_reconnects_after_dropped_connection(
    factory: sessionmaker[Session], session: Session, tmp_path: Path
) -> None:
    rid = _leased_run(session)
    sink = DbSink(rid, "tok", factory, lease_s=60)
    sink.on_round(_event(0))
    if sink._conn is not None:  # Postgres: kill the held connection; the next round reconnects once
        sink._conn.connection.driver_connection.close()  # type: ignore[union-attr]
    sink.on_round(_event(1))
    sink.close()
    assert [r[0] for r in _snapshot(session, rid)["rounds"]] == [0, 1]


def test_round_history_order_and_since(session: Session) -> None:
    rid = _leased_run(session)
    for r in (0, 1, 2, 3):
        _write(session, rid, r, 0.1 * r)
    other = _leased_run(session)
    hist = metrics_repo.round_history(session, [rid, other], since_round=0)
    assert [r for r, _ in hist[rid]] == [1, 2, 3]
    assert hist[other] == []
    assert hist[rid][0][1] == {"test_acc": 0.1, "loss": 1.5, "lr": 0.01}


def _reference(rounds, cols, max_points):  # type: ignore[no-untyped-def]
    n = len(rounds)
    if max_points <= 0 or n <= max_points:
        return rounds, cols, None, None, False
    bounds = [(i * n) // max_points for i in range(max_points + 1)]
    out = {}, {}, {}
    for k, v in cols.items():
        out[0][k], out[1][k], out[2][k] = _downsample_python(v, bounds, max_points)
    return [rounds[bounds[i + 1] - 1] for i in range(max_points)], *out, True


def test_numpy_downsample_equals_reference_loop() -> None:
    rng = random.Random(1)
    for _ in range(500):
        n, mp = rng.randint(0, 50), rng.randint(0, 60)
        rows = [(r, {k: rng.uniform(-3, 3) for k in "abc" if rng.random() < 0.6}) for r in range(n)]
        rounds, cols = to_columns(rows)
        assert downsample(rounds, cols, mp) == _reference(rounds, cols, mp)


def test_downsample_holes_empty_and_non_numeric() -> None:
    rounds = list(range(6))
    cols = {"a": [1.0, None, None, None, 3.0, 2.0], "b": [None] * 6}
    r, last, lo, hi, ds = downsample(rounds, cols, 3)
    assert (r, ds) == ([1, 3, 5], True)
    assert last == {"a": [1.0, None, 2.0], "b": [None] * 3}
    assert lo == {"a": [1.0, None, 2.0], "b": [None] * 3}
    assert hi == {"a": [1.0, None, 3.0], "b": [None] * 3}
    assert downsample(rounds, {}, 2) == ([2, 5], {}, {}, {}, True)
    mixed = {"s": ["x", "y", None, "z"], "f": [1.0, 2.0, 3.0, 4.0]}
    assert downsample([0, 1, 2, 3], mixed, 2) == _reference([0, 1, 2, 3], mixed, 2)


def test_checkpoint_bytes_live_in_the_database(
    factory: sessionmaker[Session], session: Session
) -> None:
    """A round's checkpoint bytes (over several chunks) commit with it and read back whole; only
    the newest `keep_full` full checkpoints stay; a round refused (lease lost) stores no bytes."""
    rid = _leased_run(session)
    sink = DbSink(rid, "tok", factory, lease_s=60, keep_full=2)
    big = bytes(range(256)) * (ckpt_repo.CHUNK_BYTES // 256 * 2 + 3)  # 3 chunks
    for r in range(7):
        cks = [Checkpoint("full", r, big + bytes([r])), Checkpoint("generator", r, b"g%d" % r)]
        sink.on_round(RoundEvent(r, {"test_acc": 0.1}, [], cks if r % 2 == 0 else []))
    rows = ckpt_repo.list_checkpoints(session, rid)
    assert [(c.round, c.kind) for c in rows if c.kind == "full"] == [(4, "full"), (6, "full")]
    assert [c.round for c in rows if c.kind == "generator"] == [0, 2, 4, 6]
    newest = ckpt_repo.latest_full(session, rid)
    assert newest is not None
    assert newest.path is None
    data = ckpt_repo.read_bytes(factory, newest)
    assert data == big + bytes([6])
    assert hashlib.sha256(data).hexdigest() == newest.sha256
    chunks = session.scalar(select(func.count()).select_from(CheckpointChunk))
    assert chunks == 2 * 3 + 4  # two full checkpoints of 3 chunks, four generators of 1
    session.execute(update(Run).where(Run.id == rid).values(lease_token="thief"))
    session.commit()
    with pytest.raises(metrics_repo.LeaseLost):
        sink.on_round(RoundEvent(7, {}, [], [Checkpoint("full", 7, big)]))
    assert session.scalar(select(func.count()).select_from(CheckpointChunk)) == chunks
    sink.close()


def test_run_row_figures_follow_the_protocol(
    factory: sessionmaker[Session], session: Session
) -> None:
    """Under before_training the row's last_acc and best_acc leave round R out (the summary's
    final and best), though round R is stored and is the highest; after_aggregation counts it."""
    from fedgen.events import RunInfo

    def info(timing: str) -> RunInfo:
        return RunInfo(
            "h",
            "fp",
            2,
            2,
            [1, 1],
            [1, 1],
            [[1, 0], [0, 1]],
            10,
            "cpu",
            {"eval_timing": timing},
            0,
            {},
        )

    rows = {}
    for timing in ("before_training", "after_aggregation"):
        rid = _leased_run(session)
        sink = DbSink(rid, "tok", factory, lease_s=60, rounds=3)
        sink.on_start(info(timing))
        for r, acc in enumerate([0.1, 0.6, 0.5, 0.9]):
            sink.on_round(RoundEvent(r, {"test_acc": acc}))
        sink.close()
        rows[timing] = _snapshot(session, rid)
    assert rows["before_training"]["run"] == (3, 0.5, 0.6)
    assert [r[1] for r in rows["before_training"]["rounds"]] == [0.1, 0.6, 0.5, 0.9]
    assert rows["after_aggregation"]["run"] == (3, 0.9, 0.9)
