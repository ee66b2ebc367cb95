"""A lab's year in one database: reads of a Postgres lab of N runs, timed from outside.

    python bench/lab_scale.py [--runs 100000] [--url postgresql://postgres@127.0.0.1:5432/test]
        [--requests 20] [--no-pages] [--no-real-run]

Seeds a fresh schema of the database (--url, else FEDGEN_DATABASE_URL, else the local `test`
database), migrated to head, with --runs succeeded runs of 201 rounds (bench/lab_seed.py),
then starts the real API (`fedgen-lab api` on a free loopback port) and times over HTTP the
p50 and p95 of --requests requests (after one unmeasured) of each read: runs page 1 and a
deep page (offset 10,000, and the cursor at the same depth), every list filter, one run's
metrics and users, /compare of 50 runs, the 1,000-run sweep's summary and plot data, /me.
A run's DELETE (to the trash) and purge are timed once each. Then the dashboard's Runs page
and a Compare of 20 runs in headless Chromium (time to usable: the table shown and the
script idle; the chart's traces drawn), the median of 3 visits after a warm-up.

Prints the database's size per run and, from a real 20-user, 200-round FedGen run submitted
to a real API and run by a real worker (bench/storage_per_round.py: measure), what the database
grows by per round (every table but the checkpoints', indexes and TOAST included, after VACUUM
ANALYZE); with --no-real-run, or without that module, the bytes per round of the seeded
per-round tables (said so). Ends with
`N runs: slowest read p95 X ms (endpoint); pages Y ms; Z bytes per round`.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, select, text

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the repository's packages
    sys.path.insert(0, str(ROOT))

from bench.lab_seed import ROUNDS, SeededLab, per_round_tables, seed  # noqa: E402
from bench.scratch_db import scratch_database  # noqa: E402
from lab.db import make_engine  # noqa: E402
from lab.models import Base, Run  # noqa: E402
from lab.repository.run_list import encode_cursor  # noqa: E402

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
API = "/api/v1"
DEEP = 10_000
PAGE_VISITS = 3
LAB_CLI = [sys.executable, "-c", "import sys; from admin.cli import main; sys.exit(main())"]


def p95(values: list[float]) -> float:
    """The nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(argv: list[str], env: dict[str, str], health: str | None, log: Path) -> Iterator[None]:
    """A child process in its own process group, up once `health` answers (at once without
    one: a worker); stopped on exit."""
    import signal

    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 120
            while health is not None:
                if proc.poll() is not None:
                    raise RuntimeError(f"{argv[-4:]} exited with {proc.returncode}; see {log}")
                try:
                    if httpx.get(health, timeout=2).status_code < 500:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{health} did not come up; see {log}")
                time.sleep(0.25)
            yield
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)


def reads(lab: SeededLab, engine: Engine, n_runs: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (path, query) of every timed read."""
    depth = min(DEEP, max(0, n_runs - 50))
    with engine.connect() as c:
        at = c.execute(
            select(Run.created_at, Run.id)
            .where(Run.deleted_at.is_(None))
            .order_by(Run.created_at.desc(), Run.id)
            .offset(depth - 1)
            .limit(1)
        ).one()
    cursor = encode_cursor(Run(created_at=at.created_at, id=at.id))
    run = str(lab.per_user_run)
    fifty = ",".join(str(i) for i in lab.run_ids[:50])
    sweep = str(lab.big_sweep)
    return {
        "runs page 1": ("/runs", {"limit": 50}),
        f"runs offset {depth}": ("/runs", {"limit": 50, "offset": depth}),
        f"runs cursor at {depth}": ("/runs", {"limit": 50, "cursor": cursor}),
        "status=failed": ("/runs", {"status": "failed"}),
        "status+algorithm": ("/runs", {"status": "succeeded", "algorithm": "fedgen"}),
        "algorithm=fedavg": ("/runs", {"algorithm": "fedavg"}),
        "tag=paper": ("/runs", {"tag": "paper"}),
        "tag=ablation": ("/runs", {"tag": "ablation"}),
        "owner=owner3": ("/runs", {"owner": "owner3"}),
        "sweep_id (1,000 runs)": ("/runs", {"sweep_id": sweep}),
        "where=seed=3": ("/runs", {"where": "seed=3"}),
        "where alg+alpha": (
            "/runs",
            {"where": ["algorithm.name=fedgen", "partition.alpha=0.1"]},
        ),
        "where (no match)": ("/runs", {"where": "partition.alpha=0.7"}),
        "q=baseline": ("/runs", {"q": "baseline"}),
        "q (no match)": ("/runs", {"q": "zz-none"}),
        "run metrics": (f"/runs/{run}/metrics", {}),
        "run users": (f"/runs/{run}/users", {}),
        "compare 50 runs": ("/compare", {"run_ids": fifty}),
        "sweep summary (1,000)": (f"/sweeps/{sweep}/summary", {}),
        "sweep plot-data (1,000)": (f"/sweeps/{sweep}/plot-data", {"x": "partition.alpha"}),
        "me": ("/me", {}),
    }


def time_reads(
    client: httpx.Client, named: dict[str, tuple[str, dict[str, Any]]], repeat: int
) -> dict[str, tuple[float, float]]:
    """name -> (p50, p95) in ms; a read that is not there (404) is left out with a note."""
    out: dict[str, tuple[float, float]] = {}
    for name, (path, query) in named.items():
        first = client.get(API + path, params=query)
        if first.status_code == 404 and name == "me":
            print(f"{name:28s} skipped: GET {API}{path} is not in this API", flush=True)
            continue
        first.raise_for_status()
        ms = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            client.get(API + path, params=query).raise_for_status()
            ms.append((time.perf_counter() - t0) * 1000)
        out[name] = (statistics.median(ms), p95(ms))
        body = first.json() if "json" in first.headers.get("content-type", "") else {}
        extra = ""
        if isinstance(body, dict) and "count" in body:
            exact = "" if body.get("count_exact", True) else " (estimate)"
            extra = f"  count {body['count']:,}{exact}"
        print(
            f"{name:28s} p50 {out[name][0]:7.1f} ms  p95 {out[name][1]:7.1f} ms  "
            f"{len(first.content) / 1e3:8.1f} KB{extra}",
            flush=True,
        )
    return out


def time_purge(client: httpx.Client, engine: Engine, run_id: uuid.UUID) -> None:
    """A run's DELETE over HTTP (to the trash), then its purge (lab.repository.trash)."""
    from lab.repository import trash as trash_repo

    t0 = time.perf_counter()
    client.delete(f"{API}/runs/{run_id}").raise_for_status()
    deleted = (time.perf_counter() - t0) * 1000
    from sqlalchemy.orm import Session

    with Session(engine) as s, s.begin():
        t0 = time.perf_counter()
        gone = trash_repo.purge_run(s, run_id, datetime.now(UTC) + timedelta(days=1))
    purged = (time.perf_counter() - t0) * 1000
    print(
        f"DELETE /runs/{{id}}: {deleted:.0f} ms; purge (rounds and per-user rows): {purged:.0f} ms"
    )
    if gone is None:
        raise RuntimeError("the purge did not delete the run")


RUNS_READY = '[data-testid="stDataFrame"]'
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
DRAWN_JS = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  if (!gd || !gd._fullData || gd._fullData.length === 0) return false;
  return performance.now();
}"""


def time_pages(api_url: str, token: str, compare_ids: list[str], home: Path) -> dict[str, float]:
    """Median ms to usable of the dashboard's Runs and Compare pages (after a warm-up)."""
    sys.path.insert(0, str(ROOT))
    from tests.support.stack import browser_page

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FEDGEN_TOKEN": token, "FEDGEN_HOME": str(home)}
    argv = [*LAB_CLI, "dashboard", "--port", str(port), "--api-url", api_url]

    def runs_page(page: Any) -> float:
        t0 = time.perf_counter()
        page.goto(f"{base}/?page=runs", wait_until="commit")
        page.locator(RUNS_READY).first.wait_for(timeout=120_000)
        page.locator(IDLE).wait_for(timeout=120_000)
        return (time.perf_counter() - t0) * 1000

    def compare_page(page: Any) -> float:
        page.goto(f"{base}/compare?runs={','.join(compare_ids)}", wait_until="commit")
        return float(page.wait_for_function(DRAWN_JS, polling="raf", timeout=120_000).json_value())

    out: dict[str, float] = {}
    with serve(argv, env, f"{base}/_stcore/health", home / "dashboard.log"):
        with browser_page(home / "profile", 1500, 1000) as page:
            for name, visit in (("Runs page", runs_page), ("Compare 20 runs", compare_page)):
                visit(page)  # warm-up: Streamlit imports the page's modules
                ms = []
                for _ in range(PAGE_VISITS):
                    time.sleep(6)  # past the dashboard's API caches (5 s)
                    ms.append(visit(page))
                out[name] = statistics.median(ms)
                print(f"{name:28s} {out[name]:7.0f} ms (median of {PAGE_VISITS})", flush=True)
    return out


def sizes(engine: Engine, n_runs: int) -> float:
    """Prints the schema's size per run; returns the seeded per-round tables' bytes per round."""
    names = [t.name for t in per_round_tables()]
    with engine.connect() as c:
        total = c.execute(
            text(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
            )
        ).scalar_one()
        rounds = c.execute(
            text(
                "SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(CAST(:n AS text[])) t"
            ),
            {"n": names},
        ).scalar_one()
    print(
        f"database: {int(total) / 1e9:.2f} GB, {int(total) / n_runs:,.0f} bytes per run; "
        f"per-round tables {names}: {int(rounds) / (n_runs * (ROUNDS + 1)):.0f} bytes per round "
        "(seeded: 5% with per-user rows)"
    )
    return float(rounds) / (n_runs * (ROUNDS + 1))


def real_bytes_per_round(url: str) -> float | None:
    """Bytes per round of a real run (bench/storage_per_round.py), or None without it."""
    if importlib.util.find_spec("bench.storage_per_round") is None:
        return None
    from bench.storage_per_round import measure

    return float(measure(url))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--url", default=os.environ.get("FEDGEN_DATABASE_URL") or DEFAULT_URL)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--no-pages", action="store_true", help="skip the dashboard in Chromium")
    ap.add_argument("--no-real-run", action="store_true", help="bytes per round: seeded tables")
    args = ap.parse_args(argv)
    if not args.url.startswith("postgresql"):
        ap.error("--url: a PostgreSQL URL (this bench times a Postgres lab)")
    started = time.perf_counter()
    with scratch_database(args.url) as url, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        engine = make_engine(url)
        lab = seed(engine, args.runs, log=lambda m: print(m, flush=True))
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            for table in Base.metadata.sorted_tables:  # this schema's (search_path), not the db's
                c.execute(text(f"VACUUM ANALYZE {table.name}"))
        print(f"seeded in {time.perf_counter() - started:.0f} s", flush=True)
        seeded_per_round = sizes(engine, args.runs)
        port = free_port()
        api_url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "FEDGEN_DATABASE_URL": url,
            "FEDGEN_HOME": str(home),
            "FEDGEN_QUEUE_PREFIX": f"bench{uuid.uuid4().hex[:6]}-",
        }
        token = lab.tokens["owner0"]
        headers = {"Authorization": f"Bearer {token}"}
        with serve(
            [*LAB_CLI, "api", "--port", str(port)], env, api_url + API + "/health", home / "api.log"
        ):
            with httpx.Client(base_url=api_url, headers=headers, timeout=120) as client:
                timed = time_reads(client, reads(lab, engine, args.runs), args.requests)
                time_purge(client, engine, lab.run_ids[-1])
            pages = (
                {}
                if args.no_pages
                else time_pages(api_url, token, [str(i) for i in lab.run_ids[:20]], home)
            )
        engine.dispose()
    real = None if args.no_real_run else real_bytes_per_round(args.url)
    if real is None:
        per_round, said = seeded_per_round, " (seeded tables, not a real run)"
    else:
        per_round, said = real, ""
        print(f"a real 20-user FedGen run grows the database by {real:.0f} bytes per round")
    print(f"total {time.perf_counter() - started:.0f} s")
    worst = max(timed, key=lambda n: timed[n][1])
    shown_pages = f"{max(pages.values()):.0f} ms" if pages else "not timed"
    print(
        f"{args.runs} runs: slowest read p95 {timed[worst][1]:.0f} ms ({worst}); "
        f"pages {shown_pages}; {per_round:.0f} bytes per round{said}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
