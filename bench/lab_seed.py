"""Seed a Postgres lab of N succeeded runs of 201 rounds through the real schema (bench/lab_scale.py).

Two template runs are written first through the worker's own round write
(`lab.repository.metrics.write_round`): one with 20 users' figures each round, one without. The
N runs are then bulk-loaded: the `runs` rows by COPY (each with its own spec: 5 algorithms, 4
alphas, 5 seeds; several owners; tags and notes on some; sweeps, one of 1,000 runs), every
other column taken from its template's row; their per-round rows are copied from the
template's in SQL, table by table, for every table with a `run_id` and a `round` column
(checkpoints' tables left out). So the rows are in whatever format the schema stores rounds
in at the time. Every 20th run (5%) gets the per-user template.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Computed, Engine, Table, text
from sqlalchemy.orm import Session, sessionmaker

from fedgen.events import UserRoundMetrics
from fedgen.spec import parse_spec
from lab.models import Base, Run, Sweep
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from lab.repository import users as users_repo

ROUNDS = 200  # rounds 0..200: 201 rows of each per-round table
USERS = 20
ALGORITHMS = ("fedavg", "fedprox", "fedensemble", "feddistill", "fedgen")
ALPHAS = (0.05, 0.1, 0.5, 1.0)
SEEDS = 5
OWNERS = 5
BIG_SWEEP = 1000  # runs in the sweep whose summary and plot data are timed
SWEEP_SIZE = 50  # the other sweeps' runs; every other block of runs is a sweep
PER_USER_EVERY = 20  # every 20th run has per-user figures (5%)
CHECKPOINT_TABLES = frozenset({"checkpoints", "checkpoint_chunks"})
TAGS = ((10, "paper"), (50, "ablation"))  # every 10th run is tagged paper, every 50th ablation
NOTE_EVERY = 100  # every 100th run has a note ("baseline ...")


@dataclass
class SeededLab:
    """What the timing needs to know about the seeded lab."""

    tokens: dict[str, str]  # owner name -> token
    big_sweep: uuid.UUID
    per_user_run: uuid.UUID
    run_ids: list[uuid.UUID] = field(default_factory=list)  # newest first, the first 1,000


def base_spec(algorithm: str, alpha: float, seed: int) -> dict[str, Any]:
    """A FedGen-paper-sized spec: MNIST, 20 users, 200 rounds."""
    return {
        "algorithm": {"name": algorithm},
        "data": {"name": "mnist"},
        "partition": {"num_users": USERS, "alpha": alpha},
        "users_per_round": 10,
        "rounds": ROUNDS,
        "seed": seed,
        "checkpoint_every": 0,
    }


def per_round_tables() -> list[Table]:
    """The tables holding rows per round of a run (checkpoints' tables left out)."""
    return [
        t
        for t in Base.metadata.sorted_tables
        if "run_id" in t.c and "round" in t.c and t.name not in CHECKPOINT_TABLES
    ]


def _metrics(r: int) -> dict[str, float]:
    """A round's metrics, with a saturating accuracy curve."""
    acc = 0.85 * (1 - math.exp(-r / 20))
    return {
        "test_acc": acc,
        "test_loss": 2.3 * (1 - acc) + 0.1,
        "user_acc_mean": acc - 0.02,
        "user_acc_min": acc - 0.2,
        "train_loss": 2.0 * (1 - acc),
        "lr": 0.01,
        "bytes_down": 1.2e6,
        "bytes_up": 1.2e6,
        "time_train_ms": 900.0,
        "time_user_ms": 90.0,
        "time_server_ms": 40.0,
        "time_eval_ms": 80.0,
        "time_total_ms": 1100.0,
    }


def _users(r: int) -> list[UserRoundMetrics]:
    acc = 0.85 * (1 - math.exp(-r / 20))
    return [
        UserRoundMetrics(
            user=u,
            test_acc=max(0.0, acc - u / 200),
            test_loss=2.3 * (1 - acc) + u / 100,
            num_test=300 + u,
            selected=u % 2 == r % 2,
            train_ms=90.0 + u if u % 2 == r % 2 else None,
            train_loss=2.0 * (1 - acc) if u % 2 == r % 2 else None,
        )
        for u in range(USERS)
    ]


def _template(factory: sessionmaker[Session], owner: uuid.UUID, with_users: bool) -> uuid.UUID:
    """A run of 201 rounds written through write_round, succeeded."""
    spec = parse_spec(base_spec("fedgen", 0.1, 0))
    token = f"seed-{uuid.uuid4().hex[:8]}"
    with factory() as s, s.begin():
        run = runs_repo.create_run(
            s,
            spec=spec.model_dump(mode="json"),
            spec_hash=spec.spec_hash(),
            owner_id=owner,
            queue="bench-cpu",
        )
        runs_repo.claim(s, run.id, worker="seed", token=token, device="cpu", lease_s=3600)
        for r in range(ROUNDS + 1):
            metrics_repo.write_round(
                s,
                run.id,
                token,
                round_=r,
                metrics=_metrics(r),
                users=_users(r) if with_users else [],
                checkpoints=[],
                lease_s=3600,
            )
        runs_repo.finish(s, run.id, token, status="succeeded", summary={"final_acc": 0.85})
        return run.id


def _specs() -> dict[tuple[str, float, int], tuple[str, str]]:
    """(algorithm, alpha, seed) -> (spec JSON, spec hash), every spec validated once."""
    out = {}
    for alg in ALGORITHMS:
        for alpha in ALPHAS:
            for seed in range(BIG_SWEEP // (len(ALGORITHMS) * len(ALPHAS))):
                spec = parse_spec(base_spec(alg, alpha, seed))
                out[(alg, alpha, seed)] = (
                    json.dumps(spec.model_dump(mode="json")),
                    spec.spec_hash(),
                )
    return out


def _column_value(column: Any, template: dict[str, Any]) -> Any:
    value = template[column.name]
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


def seed(engine: Engine, n_runs: int, log: Any = print) -> SeededLab:
    """Seed `n_runs` runs (plus the two templates) into the migrated database of `engine`."""
    factory = sessionmaker(bind=engine, expire_on_commit=False)
    tokens: dict[str, str] = {}
    owner_ids: list[uuid.UUID] = []
    with factory() as s:
        for i in range(OWNERS):
            user, token = users_repo.create_user(s, f"owner{i}", i == 0)
            tokens[user.name] = token
            owner_ids.append(user.id)
        s.commit()
    with_users = _template(factory, owner_ids[0], True)
    plain = _template(factory, owner_ids[0], False)
    columns = [c for c in Run.__table__.columns if not isinstance(c.computed, Computed)]
    with engine.connect() as c:
        rows = c.execute(
            text("SELECT * FROM runs WHERE id IN (:a, :b)"), {"a": with_users, "b": plain}
        )
        templates = {r.id: r._asdict() for r in rows}
    specs = _specs()
    now = datetime.now(UTC)
    sweeps: list[tuple[uuid.UUID, int, int]] = []  # (id, first run index, last + 1)
    big = uuid.uuid4()
    sweeps.append((big, 0, min(BIG_SWEEP, n_runs)))
    start = BIG_SWEEP
    while start + SWEEP_SIZE <= n_runs:
        sweeps.append((uuid.uuid4(), start, start + SWEEP_SIZE))
        start += 2 * SWEEP_SIZE
    sweep_of: dict[int, uuid.UUID] = {}
    for sid, lo, hi in sweeps:
        for i in range(lo, hi):
            sweep_of[i] = sid
    with factory() as s:
        for k, (sid, _lo, _hi) in enumerate(sweeps):
            s.add(
                Sweep(
                    id=sid,
                    name="big" if sid == big else f"sweep-{k}",
                    base=base_spec("fedavg", 0.1, 0),
                    grid={"algorithm": list(ALGORITHMS), "partition.alpha": list(ALPHAS)},
                    owner_id=owner_ids[k % OWNERS],
                    created_at=now - timedelta(days=365),
                )
            )
        s.commit()
    log(f"seeding {n_runs} runs: {len(sweeps)} sweeps, {OWNERS} owners")
    ids: list[uuid.UUID] = []
    per_user: list[uuid.UUID] = []
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        # The rows are made consistent here: without this, each of the 20 M copied round rows
        # has its foreign key checked at the statement's end (most of the seeding time).
        # Needs a superuser, as the local `test` database's postgres is.
        cur.execute("SET session_replication_role = replica")
        names = ", ".join(c.name for c in columns)
        with cur.copy(f"COPY runs ({names}) FROM STDIN") as copy:
            for i in range(n_runs):
                rid = uuid.uuid4()
                users_too = i % PER_USER_EVERY == 0
                template = dict(templates[with_users if users_too else plain])
                alg = ALGORITHMS[i % len(ALGORITHMS)]
                alpha = ALPHAS[(i // len(ALGORITHMS)) % len(ALPHAS)]
                seed_ = (i // (len(ALGORITHMS) * len(ALPHAS))) % (
                    BIG_SWEEP // (len(ALGORITHMS) * len(ALPHAS)) if i < BIG_SWEEP else SEEDS
                )
                spec, spec_hash = specs[(alg, alpha, seed_)]
                tags = [tag for every, tag in TAGS if i % every == 0]
                created = now - timedelta(seconds=60 * (n_runs - i))  # the last index is newest
                template.update(
                    id=rid,
                    spec=json.loads(spec),
                    spec_hash=spec_hash,
                    algorithm=alg,
                    tags_csv="," + "".join(f"{t}," for t in tags),
                    note=f"baseline {i}" if i % NOTE_EVERY == 0 else "",
                    owner_id=owner_ids[i % OWNERS],
                    sweep_id=sweep_of.get(i),
                    status="failed" if i % 100 == 99 else "succeeded",
                    created_at=created,
                    started_at=created + timedelta(seconds=5),
                    finished_at=created + timedelta(seconds=1800),
                )
                copy.write_row([_column_value(c, template) for c in columns])
                ids.append(rid)
                if users_too:
                    per_user.append(rid)
        raw.commit()
        log(f"runs copied; copying their rounds ({n_runs * (ROUNDS + 1):,} rows per table)")
        cur.execute("CREATE TEMP TABLE seed_runs (id uuid PRIMARY KEY, per_user bool)")
        with cur.copy("COPY seed_runs (id, per_user) FROM STDIN") as copy:
            for i, rid in enumerate(ids):
                copy.write_row((rid, i % PER_USER_EVERY == 0))
        for table in per_round_tables():
            cols = [c.name for c in table.columns if c.name != "run_id" and c.computed is None]
            listed = ", ".join(cols)
            picked = ", ".join(f"t.{c}" for c in cols)
            for template_id, flag in ((with_users, True), (plain, False)):
                cur.execute(
                    f"INSERT INTO {table.name} (run_id, {listed}) SELECT s.id, {picked} "
                    f"FROM seed_runs s JOIN {table.name} t ON t.run_id = %s "
                    "WHERE s.per_user = %s",
                    (template_id, flag),
                )
            raw.commit()
            log(f"  {table.name}: copied")
    finally:
        raw.close()
    newest = list(reversed(ids))
    return SeededLab(tokens, big, per_user[-1] if per_user else with_users, newest[:1000])
