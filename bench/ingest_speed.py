"""Metric ingestion: rounds/s of 20-user metrics written by one worker's path (DbSink) into a DB.

Usage: python bench/ingest_speed.py [--url postgresql://postgres@127.0.0.1/test] [--rounds 2000]
Writes into a throwaway schema (Postgres) or temp file (SQLite); target >= 2000 rounds/s.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sqlalchemy import update

from api.db import make_engine, make_sessionmaker
from api.models import Run
from api.repository import runs as runs_repo
from api.repository import users as users_repo
from api.store import CheckpointStore
from bench.scratch_db import scratch_database
from fedgen.events import COMMON_METRICS, RoundEvent, UserRoundMetrics
from worker.sink import DbSink

METRICS = (
    [k for k in COMMON_METRICS if k != "train_loss"]
    + ["train_loss"]
    + ["gen_teacher_loss", "gen_diversity_loss"]
)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    p.add_argument("--rounds", type=int, default=2000)
    p.add_argument("--users", type=int, default=20)
    p.add_argument(
        "--sync-commit", action="store_true", help="wait for the WAL flush on each commit"
    )
    a = p.parse_args()
    with scratch_database(a.url) as url:
        engine = make_engine(url, async_commit=not a.sync_commit and url.startswith("postgresql"))
        factory = make_sessionmaker(engine)
        with factory() as s:
            user, _ = users_repo.create_user(s, "bench")
            spec = {
                "algorithm": {"name": "fedgen"},
                "data": {"name": "synthetic"},
                "rounds": a.rounds,
            }
            run = runs_repo.create_run(s, spec=spec, spec_hash="x", owner_id=user.id, queue="cpu")
            s.execute(
                update(Run).where(Run.id == run.id).values(lease_token="bench", status="running")
            )
            s.commit()
            rid = run.id
        sink = DbSink(rid, "bench", factory, CheckpointStore(Path(tempfile.mkdtemp())), lease_s=60)
        events = [
            RoundEvent(
                r,
                dict.fromkeys(METRICS, 0.5 + r * 0.0001),
                [UserRoundMetrics(u, 0.5, 1.0, 100, u % 2 == 0, 12.5, 0.3) for u in range(a.users)],
            )
            for r in range(a.rounds)
        ]
        t0 = time.perf_counter()
        for ev in events:
            sink.on_round(ev)
        dt = time.perf_counter() - t0
        print(
            f"backend={engine.dialect.name} rounds={a.rounds} users/round={a.users} "
            f"seconds={dt:.2f} rounds_per_s={a.rounds / dt:.0f} (one transaction per round, "
            f"synchronous_commit={'on' if a.sync_commit else 'off'})"
        )
        engine.dispose()


if __name__ == "__main__":
    main()
