"""Runs per hour of a lab worker with `--slots 1` and `--slots 2` on this machine, and the ratio.

A fixed batch (default 8 runs: 4 FedAvg + 4 FedGen, seeds 0-3, 50 rounds, Fashion-MNIST at
the paper's setting: 20 users, alpha 0.1, 10 users a round, T=20, B=32, lr 0.01) is
submitted (api.service.submit_run, as `POST /runs` does) to a scratch lab, then one
`fedgen-lab worker --slots N` drains it. Each slot count gets a fresh lab: a new Postgres
schema (bench/scratch_db.py; or SQLite with --db sqlite), a new queue prefix on Redis (or
an SQLite broker), a temp FEDGEN_HOME. Runs per hour = runs / wall time from the worker's
start to the last run's end (worker start-up included: a lab pays it too); the span from
the first run's start to the last run's end is printed as well.

Whole labs cannot be interleaved, so the slot counts run back to back in this one process
(same machine, minutes apart) and the figure to quote is their ratio, not the absolute
runs per hour, which depend on how busy the machine is.

    python bench/lab_throughput.py [--runs 8] [--rounds 50] [--slots 1,2] [--dataset fashion-mnist]
                                   [--db postgresql+psycopg://postgres@127.0.0.1:5432/test | sqlite]
                                   [--broker redis://127.0.0.1:6379/0]
Quick check: python bench/lab_throughput.py --runs 4 --rounds 5
Threads apart from slots: --slots 1,1:1,2 adds `--slots 1 --threads 1` between the two.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from api.service import Submitter, submit_run  # noqa: E402
from bench.scratch_db import scratch_database  # noqa: E402
from fedgen.spec import parse_spec  # noqa: E402
from lab.config import Settings  # noqa: E402
from lab.db import make_engine, make_sessionmaker, session_scope  # noqa: E402
from lab.models import Run  # noqa: E402
from lab.queue import Sender  # noqa: E402
from lab.repository import users as users_repo  # noqa: E402
from vocab.run_status import TERMINAL  # noqa: E402
from worker.slots import usable_cores  # noqa: E402

PG_DEFAULT = os.environ.get(
    "FEDGEN_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def batch(runs: int, rounds: int, dataset: str) -> list[dict[str, Any]]:
    """`runs` specs: the first half FedAvg, the rest FedGen, seeds 0, 1, ... within each."""
    n_avg = (runs + 1) // 2
    data: dict[str, Any] = {"name": dataset}
    if dataset == "synthetic":  # enough samples for the paper's split (20 users, alpha 0.1)
        data["synthetic_samples"] = 20000
    out = []
    for i in range(runs):
        algo, seed = ("fedavg", i) if i < n_avg else ("fedgen", i - n_avg)
        out.append(
            {
                "data": data,
                "partition": {"num_users": 20, "alpha": 0.1, "sampling_ratio": 0.5},
                "algorithm": {"name": algo},
                "users_per_round": 10,
                "rounds": rounds,
                "local_steps": 20,
                "batch_size": 32,
                "lr": 0.01,
                "seed": seed,
                "checkpoint_every": max(1, rounds // 2),
                "tags": ["lab-throughput"],
            }
        )
    return out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def drain(
    slots: int, threads: int | None, specs: list[dict[str, Any]], db: str, broker: str
) -> dict[str, Any]:
    """Submit `specs` to a fresh lab, start `worker --slots`, wait for all; the figures."""
    with scratch_database(db) as url, tempfile.TemporaryDirectory() as home:
        prefix = f"lt{uuid.uuid4().hex[:8]}-"
        if broker == "sqlite":
            broker_url = f"sqla+sqlite:///{home}/broker.db"
        else:
            broker_url = broker
        settings = Settings(
            database_url=url, broker_url=broker_url, home=Path(home), queue_prefix=prefix
        )
        engine = make_engine(url)
        factory = make_sessionmaker(engine)
        send = Sender(settings).send
        with session_scope(factory) as s:
            user, _ = users_repo.create_user(s, "bench", True)
            # the workers start after submitting; their dispatcher sends the runs
            sub = Submitter(s, user, send, settings, dispatch_now=False)
            ids = [submit_run(sub, parse_spec(spec)).id for spec in specs]
        env = dict(
            os.environ,
            FEDGEN_DATABASE_URL=url,
            FEDGEN_BROKER_URL=broker_url,
            FEDGEN_HOME=home,
            FEDGEN_QUEUE_PREFIX=prefix,
            FEDGEN_AUTO_UPGRADE="0",
            PYTHONPATH=str(ROOT),
        )
        log = Path(home) / "worker.log"
        t0 = time.perf_counter()
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "worker", "--slots", str(slots)]
                + (["--threads", str(threads)] if threads else [])
                + ["--queues", "cpu", "--loglevel", "WARNING"]
                + (["--embedded"] if broker == "sqlite" else []),  # the SQLite broker on purpose
                env=env,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                while True:
                    with factory() as s:
                        rows = [s.get(Run, rid) for rid in ids]
                        done = [r for r in rows if r is not None and r.status in TERMINAL]
                    if len(done) == len(ids):
                        break
                    if proc.poll() is not None:
                        raise SystemExit(
                            f"the worker exited early; log:\n{log.read_text()[-3000:]}"
                        )
                    time.sleep(1.0)
                wall = time.perf_counter() - t0
            finally:
                _stop(proc)
        engine.dispose()
    failed = [(str(r.id), r.error) for r in rows if r.status != "succeeded"]
    starts = [r.started_at for r in rows if r.started_at is not None]
    ends = [r.finished_at for r in rows if r.finished_at is not None]
    span = (max(ends) - min(starts)).total_seconds() if starts and ends else float("nan")
    used = sorted({str((r.versions or {}).get("torch_threads", "?")) for r in rows})
    busy = sum(
        (r.finished_at - r.started_at).total_seconds()
        for r in rows
        if r.started_at is not None and r.finished_at is not None
    ) / max(1, len({r.worker for r in rows if r.worker}))
    gaps = idle_gaps(rows)
    return {
        "label": f"--slots {slots}" + (f" --threads {threads}" if threads else ""),
        "wall_s": wall,
        "span_s": span,
        "runs_per_hour": len(ids) / wall * 3600,
        "failed": failed,
        "threads": ",".join(used),
        "back_to_back_s": busy,
        "gaps": gaps,
    }


def idle_gaps(rows: list[Run]) -> list[float]:
    """Seconds each slot sat idle between the end of one run and the start of its next."""
    by_slot: dict[str, list[Run]] = {}
    for r in rows:
        if r.worker and r.started_at and r.finished_at:
            by_slot.setdefault(r.worker, []).append(r)
    gaps = []
    for runs in by_slot.values():
        runs.sort(key=lambda r: r.started_at)  # type: ignore[arg-type, return-value]
        for prev, nxt in zip(runs, runs[1:], strict=False):
            gaps.append((nxt.started_at - prev.finished_at).total_seconds())  # type: ignore[operator]
    return gaps


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--runs", type=int, default=8, help="runs in the batch (half FedAvg, half FedGen)"
    )
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument(
        "--slots",
        default="1,2",
        help="worker configurations to compare, in this order: N (threads cores // N) or N:T "
        "(--threads T), e.g. 1,1:1,2",
    )
    p.add_argument("--dataset", default="fashion-mnist", help="fashion-mnist or synthetic")
    p.add_argument("--db", default=PG_DEFAULT, help="a Postgres URL (a scratch schema) or sqlite")
    p.add_argument(
        "--broker", default="redis://127.0.0.1:6379/0", help="a Redis URL or sqlite (embedded)"
    )
    a = p.parse_args()
    if a.runs < 1 or a.rounds < 1:
        p.error("--runs and --rounds must be >= 1")
    configs = []
    for item in (x.strip() for x in a.slots.split(",") if x.strip()):
        n, _, t = item.partition(":")
        configs.append((int(n), int(t) if t else None))
    specs = batch(a.runs, a.rounds, a.dataset)
    started = datetime.now().astimezone().isoformat(timespec="seconds")
    print(
        f"lab throughput: {a.runs} runs ({sum(s['algorithm']['name'] == 'fedavg' for s in specs)}"
        f" FedAvg + {sum(s['algorithm']['name'] == 'fedgen' for s in specs)} FedGen), "
        f"{a.rounds} rounds, {a.dataset}; {usable_cores()} cores; python {platform.python_version()};"
        f" db {'sqlite' if a.db == 'sqlite' else 'postgres'}; started {started}",
        flush=True,
    )
    print("configurations run back to back in this process (whole labs cannot be interleaved)")
    results = []
    for n, t in configs:
        r = drain(n, t, specs, a.db, a.broker)
        results.append(r)
        print(
            f"{r['label']}: {r['runs_per_hour']:.1f} runs/hour  (wall {r['wall_s']:.1f} s incl."
            f" worker start-up; first start to last end {r['span_s']:.1f} s; torch threads per"
            f" run {r['threads']}; failed {len(r['failed'])})",
            flush=True,
        )
        gaps = r["gaps"]
        if gaps:
            print(
                f"  idle between runs on a slot: median {statistics.median(gaps):.2f} s, max"
                f" {max(gaps):.2f} s over {len(gaps)} hand-overs; first start to last end"
                f" {r['span_s']:.1f} s against back to back {r['back_to_back_s']:.1f} s (run"
                f" times summed / slots): {r['span_s'] / r['back_to_back_s']:.2f}x",
                flush=True,
            )
        for rid, err in r["failed"]:
            print(f"  failed {rid}: {(err or '')[:300]}")
    base = results[0]
    for r in results[1:]:
        print(
            f"ratio {r['label']} / {base['label']}: "
            f"{r['runs_per_hour'] / base['runs_per_hour']:.2f}x runs per hour"
        )
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
