"""Bytes a real run stores per round outside its checkpoints: round and per-user figures together.

A real 20-user FedGen run on Fashion-MNIST (the official CNN; few local steps, so 200 rounds take
minutes on 2 cores; on a host without Fashion-MNIST's files under --data-root, $FEDGEN_DATA or
Debian's folder, the synthetic dataset, said so: the rows a round stores have the same shape)
goes through the worker's own write path (worker.sink.DbSink ->
lab.repository.metrics.write_round) into a scratch Postgres schema. The per-round tables (every
table with a `round` column except the checkpoints': `per_round_tables`) are sized (heap, TOAST
and indexes: `stored_bytes`) after a 10-round run and after a 200-round run;
bytes per round = (growth of the 200-round run - growth of the 10-round run) / 190, so what a run
stores once (its first pages) cancels out. A 2-round run first gives every table and index its
first pages, which would otherwise count against the 10-round run.

    python bench/storage_per_round.py [--url postgresql://postgres@127.0.0.1:5432/test]
        [--data-root DIR] [--users 20] [--rounds 10,200]

`measure(url)` is the function bench/lab_scale.py calls; it returns bytes per round (a float).
"""

from __future__ import annotations

import argparse
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text, update
from sqlalchemy.orm import Session, sessionmaker

from bench.scratch_db import scratch_database
from lab.db import make_engine, make_sessionmaker
from lab.models import Base, Run
from lab.repository import runs as runs_repo
from lab.repository import users as users_repo
from worker.sink import DbSink

TOKEN = "bench-storage"
# The checkpoints' own tables: what a run stores per round "outside its checkpoints" leaves them.
CHECKPOINT_TABLES = frozenset({"checkpoints", "checkpoint_chunks"})


def per_round_tables() -> list[str]:
    """The tables that hold rows per round of a run (a `round` column), checkpoints left out."""
    return sorted(
        t.name
        for t in Base.metadata.sorted_tables
        if "round" in t.c and "run_id" in t.c and t.name not in CHECKPOINT_TABLES
    )


def dataset_for(data_root: str | None) -> str:
    """fashion-mnist when its files are found (under data_root, else the default root), else
    synthetic."""
    from fedgen.data.common import default_root
    from fedgen.data.locate import present

    root = Path(data_root) if data_root else default_root()
    return "fashion-mnist" if present("fashion-mnist", root) else "synthetic"


def spec_of(rounds: int, users: int, data_root: str | None, dataset: str) -> dict[str, Any]:
    """A real FedGen run: `dataset`, the official CNN, `users` users, 2 local steps."""
    data: dict[str, Any] = {"name": dataset}
    if data_root and dataset != "synthetic":
        data["root"] = data_root
    return {
        "algorithm": {"name": "fedgen"},
        "data": data,
        "model": {"name": "official-cnn"},
        "partition": {"num_users": users},
        "users_per_round": max(1, users // 2),
        "local_steps": 2,
        "rounds": rounds,
        "checkpoint_every": 0,  # only at the end: checkpoints are not what is measured
    }


def _running_run(factory: sessionmaker[Session], spec: dict[str, Any]) -> uuid.UUID:
    """A run row leased to TOKEN, as a worker's claim leaves it."""
    with factory() as s:
        user, _ = users_repo.create_user(s, f"bench-{uuid.uuid4().hex[:8]}")
        run = runs_repo.create_run(s, spec=spec, spec_hash="x", owner_id=user.id, queue="cpu")
        s.execute(update(Run).where(Run.id == run.id).values(lease_token=TOKEN, status="running"))
        s.commit()
        return run.id


def run_real(factory: sessionmaker[Session], spec_data: dict[str, Any]) -> int:
    """Run `spec_data` to its end through DbSink; returns the rounds written."""
    from fedgen.runner import run
    from fedgen.spec import parse_spec

    spec = parse_spec(spec_data)
    sink = DbSink(_running_run(factory, spec_data), TOKEN, factory, lease_s=600)
    try:
        run(spec, sink)
    finally:
        sink.close()
    return sink.rounds_written


# The main fork of a table, of its TOAST table, and of every index of either: what rows take.
# Left out: the free-space and visibility maps, 32 KB a table that appear whenever autovacuum
# first visits it (an insert-only table, after 1,000 rows), which made two measurements of the
# same code differ by 65,536 bytes / 190 rounds.
_MAIN_FORKS = text(
    """
    WITH rel AS (
        SELECT c.oid, c.reltoastrelid FROM pg_class c WHERE c.oid = CAST(:t AS regclass)
    ), parts AS (
        SELECT oid FROM rel
        UNION ALL SELECT reltoastrelid FROM rel WHERE reltoastrelid <> 0
        UNION ALL SELECT i.indexrelid FROM pg_index i, rel
            WHERE i.indrelid IN (rel.oid, rel.reltoastrelid)
    )
    SELECT COALESCE(SUM(pg_relation_size(oid, 'main')), 0) FROM parts
    """
)


def stored_bytes(engine: Engine, tables: list[str]) -> int:
    """Bytes of `tables` together: heap, TOAST and indexes (their main forks)."""
    with engine.connect() as c:
        return sum(int(c.execute(_MAIN_FORKS, {"t": t}).scalar_one()) for t in tables)


def measure(
    url: str,
    *,
    data_root: str | None = None,
    users: int = 20,
    short: int = 10,
    long: int = 200,
    verbose: bool = False,
) -> float:
    """Bytes per round of a real `users`-user FedGen run (see the module docstring)."""
    from fedgen.threads import set_threads

    set_threads(1)  # a bench on a shared machine takes one core
    with scratch_database(url) as scoped:
        if not scoped.startswith("postgresql"):
            raise ValueError("storage is measured on PostgreSQL (pg_total_relation_size)")
        engine = make_engine(scoped)
        factory = make_sessionmaker(engine)
        tables = per_round_tables()
        dataset = dataset_for(data_root)
        if verbose:
            print(f"dataset: {dataset}")
        try:
            run_real(factory, spec_of(2, users, data_root, dataset))
            sizes = [stored_bytes(engine, tables)]
            for rounds in (short, long):
                t0 = time.perf_counter()
                written = run_real(factory, spec_of(rounds, users, data_root, dataset))
                sizes.append(stored_bytes(engine, tables))
                if verbose:
                    print(
                        f"{rounds}-round run: {written} rounds written in "
                        f"{time.perf_counter() - t0:.0f} s, tables {tables} grew "
                        f"{sizes[-1] - sizes[-2]} B"
                    )
        finally:
            engine.dispose()
    grow_short, grow_long = sizes[1] - sizes[0], sizes[2] - sizes[1]
    return (grow_long - grow_short) / (long - short)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    p.add_argument("--data-root", default=None, help="data.root of the runs (FashionMNIST/raw)")
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--rounds", default="10,200", help="the short and the long run's rounds")
    a = p.parse_args()
    short, long = (int(x) for x in a.rounds.split(","))
    root = str(Path(a.data_root).resolve()) if a.data_root else None
    per_round = measure(a.url, data_root=root, users=a.users, short=short, long=long, verbose=True)
    print(f"{per_round:.0f} bytes per round ({a.users} users; tables {per_round_tables()})")


if __name__ == "__main__":
    main()
