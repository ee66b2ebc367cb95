"""Bytes a real run grows the lab's database by per round, checkpoints left out, from outside.

A real 20-user FedGen run on Fashion-MNIST (the official CNN; few local steps, so 200 rounds take
minutes on 2 cores; on a host without Fashion-MNIST's files under --data-root, $FEDGEN_DATA or
Debian's folder, the synthetic dataset, said so: the rows a round stores have the same shape) is
submitted over HTTP to the real API (`fedgen-lab api`) and run by a real worker (`fedgen-lab
worker`, Redis broker) on a scratch Postgres schema: every write a run causes counts (its rounds,
its run row's per-round updates and what they leave in the runs table's indexes, audit rows,
workers' heartbeats...), not only the rows `write_round` inserts. After each run the database
is vacuumed (VACUUM ANALYZE) and every table except the checkpoints' is sized with
pg_total_relation_size (heap, TOAST, indexes and their maps: `database_bytes`).
Bytes per round = (growth of the 200-round run - growth of the 10-round run) / 190, so what a
run stores once (its run row, its first pages) cancels out. A 2-round run first gives every
table and index its first pages, which would otherwise count against the 10-round run.

    python bench/storage_per_round.py [--url postgresql://postgres@127.0.0.1:5432/test]
        [--broker redis://127.0.0.1:6379/0] [--data-root DIR] [--dataset synthetic] [--users 20]
        [--rounds 10,200]

`measure(url)` is the function bench/lab_scale.py calls; it returns bytes per round (a float).
The script (measure(verbose=True)) also prints each table's growth per round.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, text

from bench.lab_scale import LAB_CLI, ROOT, free_port, serve
from bench.scratch_db import scratch_database
from lab.db import make_engine
from vocab.run_status import TERMINAL, RunStatus

API = "/api/v1"
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
# The checkpoints' own tables: what a run stores per round "outside its checkpoints" leaves them.
CHECKPOINT_TABLES = frozenset({"checkpoints", "checkpoint_chunks"})
RUN_TIMEOUT_S = 3600.0


def dataset_for(data_root: str | None) -> str:
    """fashion-mnist when its files are found (under data_root, else the default root), else
    synthetic."""
    from fedgen.data.common import default_root
    from vocab.host_datasets import present

    root = Path(data_root) if data_root else default_root()
    return "fashion-mnist" if present("fashion-mnist", root) else "synthetic"


def spec_of(rounds: int, users: int, data_root: str | None, dataset: str) -> dict[str, Any]:
    """A real FedGen run: `dataset`, the official CNN, `users` users, 2 local steps."""
    data: dict[str, Any] = {"name": dataset}
    if data_root and dataset != "synthetic":
        data["root"] = data_root
    if dataset == "synthetic":  # enough samples that a Dirichlet split gives every user some
        data["synthetic_samples"] = 10_000
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


_TABLES = text(
    "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
    "AND c.relkind IN ('r', 'p') ORDER BY c.relname"
)


def database_bytes(engine: Engine) -> dict[str, int]:
    """table -> pg_total_relation_size (heap, TOAST, indexes) of every table of the schema but
    the checkpoints', after VACUUM ANALYZE: what the database holds, dead rows reclaimed."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        names = [n for n in c.execute(_TABLES).scalars() if n not in CHECKPOINT_TABLES]
        for name in names:
            c.execute(text(f'VACUUM ANALYZE "{name}"'))
        size = text("SELECT pg_total_relation_size(CAST(:t AS regclass))")
        return {n: int(c.execute(size, {"t": n}).scalar_one()) for n in names}


@contextmanager
def lab(url: str, broker: str, home: Path) -> Iterator[httpx.Client]:
    """The real API and one worker (one slot, one thread) on `url`; a client with a member's
    token. Both are stopped on exit."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "FEDGEN_DATABASE_URL": url,
        "FEDGEN_BROKER_URL": broker,
        "FEDGEN_HOME": str(home),
        "FEDGEN_QUEUE_PREFIX": f"bench{uuid.uuid4().hex[:6]}-",
        "CUDA_VISIBLE_DEVICES": "",
    }
    create = [*LAB_CLI, "users", "create", "bench-storage"]
    made = subprocess.run(create, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    token = made.stdout.strip().splitlines()[-1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    worker = [*LAB_CLI, "worker", "--queues", "cpu", "--slots", "1", "--threads", "1"]
    with (
        serve(
            [*LAB_CLI, "api", "--port", str(port)], env, base + API + "/health", home / "api.log"
        ),
        serve(worker + ["--loglevel", "WARNING", "--quiet"], env, None, home / "worker.log"),
        httpx.Client(
            base_url=base + API, headers={"Authorization": f"Bearer {token}"}, timeout=120
        ) as client,
    ):
        yield client


def run_real(client: httpx.Client, spec: dict[str, Any]) -> int:
    """Submit `spec` over HTTP and wait for the worker to finish it; returns its rounds."""
    sent = client.post("/runs", json={"spec": spec})
    if sent.is_error:
        raise RuntimeError(f"POST /runs answered {sent.status_code}: {sent.text}")
    run_id = sent.json()["id"]
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        run = client.get(f"/runs/{run_id}").raise_for_status().json()
        if run["status"] in TERMINAL:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} still {run['status']} after {RUN_TIMEOUT_S:.0f} s")
        time.sleep(1)
    if run["status"] != RunStatus.SUCCEEDED:
        raise RuntimeError(f"run {run_id} {run['status']}: {run.get('error')}")
    return int(spec["rounds"])


def measure(
    url: str,
    *,
    broker: str = DEFAULT_BROKER,
    data_root: str | None = None,
    dataset: str | None = None,
    users: int = 20,
    short: int = 10,
    long: int = 200,
    verbose: bool = False,
) -> float:
    """Bytes per round of a real `users`-user FedGen run (see the module docstring)."""
    with scratch_database(url) as scoped, tempfile.TemporaryDirectory() as tmp:
        if not scoped.startswith("postgresql"):
            raise ValueError("storage is measured on PostgreSQL (pg_total_relation_size)")
        engine = make_engine(scoped)
        dataset = dataset or dataset_for(data_root)
        if verbose:
            print(f"dataset: {dataset}", flush=True)
        try:
            with lab(scoped, broker, Path(tmp)) as client:
                run_real(client, spec_of(2, users, data_root, dataset))
                sizes = [database_bytes(engine)]
                for rounds in (short, long):
                    t0 = time.perf_counter()
                    run_real(client, spec_of(rounds, users, data_root, dataset))
                    sizes.append(database_bytes(engine))
                    if verbose:
                        grown = {
                            t: b - sizes[-2].get(t, 0)
                            for t, b in sizes[-1].items()
                            if b != sizes[-2].get(t, 0)
                        }
                        print(
                            f"{rounds}-round run in {time.perf_counter() - t0:.0f} s; tables "
                            f"grew {sum(grown.values())} B: {grown}",
                            flush=True,
                        )
        finally:
            engine.dispose()
    total = [sum(s.values()) for s in sizes]
    grow_short, grow_long = total[1] - total[0], total[2] - total[1]
    if verbose:
        for t in sorted(sizes[2]):
            short_t = sizes[1][t] - sizes[0].get(t, 0)
            long_t = sizes[2][t] - sizes[1][t]
            if long_t != short_t:
                print(f"  {t}: {(long_t - short_t) / (long - short):.0f} bytes per round")
    return (grow_long - grow_short) / (long - short)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    p.add_argument("--broker", default=DEFAULT_BROKER, help="the worker's Celery broker")
    p.add_argument("--data-root", default=None, help="data.root of the runs (FashionMNIST/raw)")
    p.add_argument("--dataset", default=None, help="e.g. synthetic (default: as above)")
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--rounds", default="10,200", help="the short and the long run's rounds")
    a = p.parse_args()
    short, long = (int(x) for x in a.rounds.split(","))
    root = str(Path(a.data_root).resolve()) if a.data_root else None
    per_round = measure(
        a.url,
        broker=a.broker,
        data_root=root,
        dataset=a.dataset,
        users=a.users,
        short=short,
        long=long,
        verbose=True,
    )
    print(f"{per_round:.0f} bytes per round ({a.users} users; every table but the checkpoints')")


if __name__ == "__main__":
    main()
