"""Metric ingestion: rounds/s of 20-user metrics written by one worker's path (DbSink) into a DB.

Usage: python bench/ingest_speed.py [--url postgresql://postgres@127.0.0.1/test] [--rounds 2000]
    [--checkpoint-rounds 40]
Writes into a throwaway schema (Postgres) or temp file (SQLite); target >= 1000 rounds/s.

Then, per checkpoint kind, the write time (p50, p95 ms) of rounds that each carry a real full
checkpoint (built once by `fedgen.runner.Simulation` after one round, so FedGen's Adam state
is in it): the default FedGen spec (Fashion-MNIST when /usr/share/datasets/fashion-mnist
exists, else synthetic) and FedAvg with the McMahan CNN. DbSink keeps the newest 2 full
checkpoints, so each such round also deletes an older one, as a run does.
"""

from __future__ import annotations

import argparse
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from bench.scratch_db import scratch_database
from fedgen.events import COMMON_METRICS, Checkpoint, RoundEvent, UserRoundMetrics
from fedgen.resources import format_bytes
from lab.db import make_engine, make_sessionmaker
from lab.models import Run
from lab.repository import runs as runs_repo
from lab.repository import users as users_repo
from worker.sink import DbSink

METRICS = (
    [k for k in COMMON_METRICS if k != "train_loss"]
    + ["train_loss"]
    + ["gen_teacher_loss", "gen_diversity_loss"]
)
FASHION = Path("/usr/share/datasets/fashion-mnist")


def full_checkpoint(spec_data: dict[str, Any]) -> bytes:
    """The full checkpoint of `spec_data` after its first round, as a worker would store it."""
    from fedgen import checkpoint
    from fedgen.runner import Simulation
    from fedgen.spec import parse_spec

    sim = Simulation(parse_spec(spec_data))
    sim.initial_event()
    sim.round(1)
    return checkpoint.to_bytes(sim.full_state(1))


def checkpoint_specs() -> dict[str, dict[str, Any]]:
    """Label -> spec of the checkpoints timed: the default FedGen spec and FedAvg's McMahan CNN."""
    data = {} if FASHION.is_dir() else {"data": {"name": "synthetic"}}
    dataset = "fashion-mnist" if FASHION.is_dir() else "synthetic"
    return {
        f"fedgen-default/{dataset}": {**data, "algorithm": {"name": "fedgen"}},
        f"fedavg-mcmahan-cnn/{dataset}": {**data, "model": {"name": "mcmahan-cnn"}},
    }


def bench_run(factory: sessionmaker[Session], rounds: int) -> uuid.UUID:
    """A running run row with the lease token 'bench'."""
    with factory() as s:
        user, _ = users_repo.create_user(s, f"bench-{uuid.uuid4().hex[:8]}")
        spec = {"algorithm": {"name": "fedgen"}, "data": {"name": "synthetic"}, "rounds": rounds}
        run = runs_repo.create_run(s, spec=spec, spec_hash="x", owner_id=user.id, queue="cpu")
        s.execute(update(Run).where(Run.id == run.id).values(lease_token="bench", status="running"))
        s.commit()
        return run.id


def users_of(users: int) -> list[UserRoundMetrics]:
    return [UserRoundMetrics(u, 0.5, 1.0, 100, u % 2 == 0, 12.5, 0.3) for u in range(users)]


def time_checkpoints(
    factory: sessionmaker[Session], label: str, data: bytes, rounds: int, users: int
) -> str:
    """Write `rounds` rounds each carrying `data` as a full checkpoint; one line of results."""
    sink = DbSink(bench_run(factory, rounds), "bench", factory, lease_s=60, keep_full=2)
    ms = []
    for r in range(rounds):
        metrics = dict.fromkeys(METRICS, 0.5 + r * 0.0001)
        ev = RoundEvent(r, metrics, users_of(users), [Checkpoint("full", r, data)])
        t0 = time.perf_counter()
        sink.on_round(ev)
        ms.append((time.perf_counter() - t0) * 1e3)
    sink.close()
    p50, p95 = np.percentile(ms, [50, 95])
    return (
        f"checkpoint={label} size={format_bytes(len(data))} ({len(data)} B) rounds={rounds} "
        f"p50_ms={p50:.1f} p95_ms={p95:.1f} (one transaction per round: metrics, {users} users, "
        f"the checkpoint in 1 MiB chunks; the newest 2 kept)"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    p.add_argument("--rounds", type=int, default=2000)
    p.add_argument("--users", type=int, default=20)
    p.add_argument(
        "--sync-commit", action="store_true", help="wait for the WAL flush on each commit"
    )
    p.add_argument(
        "--checkpoint-rounds",
        type=int,
        default=40,
        help="rounds carrying a real full checkpoint, per kind (0: skip)",
    )
    a = p.parse_args()
    blobs = (
        {k: full_checkpoint(v) for k, v in checkpoint_specs().items()}
        if a.checkpoint_rounds
        else {}
    )
    with scratch_database(a.url) as url:
        engine = make_engine(url, async_commit=not a.sync_commit and url.startswith("postgresql"))
        factory = make_sessionmaker(engine)
        rid = bench_run(factory, a.rounds)
        sink = DbSink(rid, "bench", factory, lease_s=60)
        events = [
            RoundEvent(r, dict.fromkeys(METRICS, 0.5 + r * 0.0001), users_of(a.users))
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
        sink.close()
        for label, data in blobs.items():
            print(time_checkpoints(factory, label, data, a.checkpoint_rounds, a.users))
        engine.dispose()


if __name__ == "__main__":
    main()
