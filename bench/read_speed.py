"""Read speed: p95 latency of GET /compare for 100 runs x 200 rounds over loopback HTTP.

Usage: python bench/read_speed.py [--url postgresql://postgres@127.0.0.1/test] [--runs 100] [--rounds 200]
Seeds a throwaway schema, serves the real app with uvicorn on 127.0.0.1, times N requests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import httpx
from sqlalchemy import insert, update

from bench.scratch_db import scratch_database
from fedgen.events import COMMON_METRICS
from lab.db import make_engine, make_sessionmaker
from lab.models import RoundMetrics, Run
from lab.repository import runs as runs_repo
from lab.repository import users as users_repo

METRICS = list(COMMON_METRICS)


def seed(factory, n_runs: int, n_rounds: int) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    with factory() as s:
        user, token = users_repo.create_user(s, "bench")
        ids = []
        for i in range(n_runs):
            spec = {
                "algorithm": {"name": "fedgen"},
                "data": {"name": "mnist"},
                "rounds": n_rounds,
                "seed": i,
            }
            run = runs_repo.create_run(
                s, spec=spec, spec_hash=str(i), owner_id=user.id, queue="cpu"
            )
            ids.append(run.id)
        s.flush()
        rows = [
            {
                "run_id": rid,
                "round": r,
                "test_acc": r / n_rounds,
                "metrics": {m: r / n_rounds + k for k, m in enumerate(METRICS)},
            }
            for rid in ids
            for r in range(n_rounds + 1)
        ]
        s.execute(insert(RoundMetrics), rows)
        # As the worker leaves finished runs: last round written, succeeded.
        s.execute(
            update(Run).where(Run.id.in_(ids)).values(current_round=n_rounds, status="succeeded")
        )
        s.commit()
    return token, [str(i) for i in ids]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--requests", type=int, default=40)
    p.add_argument("--max-points", type=int, default=0)
    p.add_argument("--port", type=int, default=8765)
    a = p.parse_args()
    with scratch_database(a.url) as url:
        engine = make_engine(url)
        factory = make_sessionmaker(engine)
        token, ids = seed(factory, a.runs, a.rounds)
        # The API runs in its own process, as in production: client and server share no GIL.
        env = dict(
            os.environ,
            FEDGEN_HOME=tempfile.mkdtemp(),
            FEDGEN_DATABASE_URL=url,
            FEDGEN_BROKER_URL="memory://",
            FEDGEN_AUTO_UPGRADE="0",
        )
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "admin",
                "api",
                "--port",
                str(a.port),
                "--log-level",
                "warning",
            ],
            env=env,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{a.port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        q = f"http://127.0.0.1:{a.port}/api/v1/compare?run_ids={','.join(ids)}&max_points={a.max_points}"
        times = []
        size = 0
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
            t0 = time.perf_counter()
            c.get(q).raise_for_status()  # the first request reads the DB; later ones hit the cache
            cold = (time.perf_counter() - t0) * 1000
            for _ in range(a.requests):
                t0 = time.perf_counter()
                r = c.get(q)
                times.append((time.perf_counter() - t0) * 1000)
                r.raise_for_status()
                size = len(r.content)
        times.sort()
        p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
        print(
            f"backend={engine.dialect.name} runs={a.runs} rounds={a.rounds + 1} metrics={len(METRICS)} "
            f"max_points={a.max_points} response={size / 1e6:.2f} MB requests={a.requests} "
            f"first={cold:.0f} ms p50={statistics.median(times):.0f} ms p95={p95:.0f} ms"
        )
        server.terminate()
        server.wait(10)
        engine.dispose()


if __name__ == "__main__":
    main()
