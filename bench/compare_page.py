"""Compare page speed: navigation until the chart is drawn, 50 finished runs x 200 rounds;
and the live refresh: one incremental update of a Compare of 20 running runs.

Usage: python -m bench.compare_page [--runs 50] [--rounds 200] [--repeat 3] [--shots DIR]
                                    [--live-runs 20] [--updates 8]

Fills a scratch lab (SQLite under a temp FEDGEN_HOME) with a finished sweep: 5
algorithms x 2 alphas x seeds, its rounds written straight through the repository's
round write (`lab.repository.metrics.write_round`, the worker's own path) with synthetic
curves instead of training. Then starts the API and the dashboard as child processes
(tests/support/stack.py), opens `/compare?runs=<all ids>` in headless Debian Chromium
through Playwright and takes the time from navigation start (`performance.now()` in the
page) until the plotly chart has drawn its traces. One unmeasured warm-up visit first;
before each measured visit the dashboard's API caches expire, so every visit fetches.

`--shots DIR` also saves screenshots of the page grouped and ungrouped (50 runs).
`--baseline DIR` serves a second dashboard from another checkout (e.g. `git archive` of
main) against the same API and alternates visits between the two, so both figures come
from one sitting; it prints the baseline's median and the ratio before the last line.

Live refresh: a second sweep of `--live-runs` runs is left running at round 100 of 200 and a
writer adds one round to every run each second (the worker's own write path). The page
(`/compare?sweep=<id>`) then reruns its data fragment every 2 s, asking only for the new
rounds. In the page, the time each refresh request leaves the browser (the WebSocket
message of the fragment's timer) and the time the chart's running-runs trace shows the new
rounds (polled every animation frame) are recorded; one update is the time between them
(server run of the fragment: GET /compare?since_round, merge, figure; transfer; plotly
redraw). It prints `compare refresh (20 running runs): <ms> ms per update (median of N,
max M)` before the last line.
The last line printed is `compare page: <ms> ms (median of 3)` (this tree's dashboard).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np

BENCH_ALGORITHMS = ["fedavg", "fedprox", "fedensemble", "feddistill", "fedgen"]
ALPHAS = [0.1, 1.0]
BASE: dict[str, Any] = {
    "data": {"name": "fashion-mnist"},
    "partition": {"num_users": 20},
    "users_per_round": 10,
    "checkpoint_every": 0,
}
# The chart is drawn: plotly has laid out the figure and drawn its traces (SVG or WebGL).
DRAWN_JS = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  if (!gd || !gd._fullData || gd._fullData.length === 0) return false;
  const svgTraces = gd.querySelectorAll('.main-svg .scatterlayer .trace').length;
  const gl = gd.querySelector('canvas.gl-canvas-context, .gl-container canvas');
  return (svgTraces > 0 || gl !== null) ? performance.now() : false;
}"""
CACHE_TTL_S = 6.0  # > the dashboard's longest TTL on the Compare page's loaders (5 s)
# In the page before any script: when each WebSocket message leaves (the fragment's timer
# sends one per refresh) and when the chart's running-runs trace changes (every frame).
UPDATES_JS = """
window.__sends = []; window.__changes = []; window.__lastKey = null;
const _send = WebSocket.prototype.send;
WebSocket.prototype.send = function (d) { window.__sends.push(performance.now()); return _send.call(this, d); };
(function poll() {
  const gd = document.querySelectorAll('.js-plotly-plot')[0];
  if (gd && gd.data) {
    const t = gd.data.find(t => t.meta && t.meta.kind === 'running');
    const key = t ? JSON.stringify(t.meta.rounds) : '';
    if (key !== window.__lastKey) { window.__lastKey = key; window.__changes.push(performance.now()); }
  }
  requestAnimationFrame(poll);
})();
"""


def curve(rng: np.random.Generator, rounds: int, alg: int, alpha: float) -> np.ndarray:
    """A plausible accuracy curve: saturating, algorithm- and alpha-dependent, noisy."""
    top = 0.70 + 0.03 * alg + (0.08 if alpha >= 1 else 0.0)
    r = np.arange(rounds + 1, dtype=float)
    acc = top * (1 - np.exp(-r / (15 + 5 * alg))) + rng.normal(0, 0.01, rounds + 1)
    return np.clip(acc, 0.0, 1.0)


def _metrics(a: float, alg: int) -> dict[str, float]:
    """One round's metrics of a synthetic run."""
    return {
        "test_acc": a,
        "test_loss": 2.3 * (1 - a) + 0.1,
        "user_acc_mean": a - 0.02,
        "user_acc_min": a - 0.2,
        "train_loss": 2.0 * (1 - a),
        "lr": 0.01,
        "bytes_down": 1e6,
        "bytes_up": 1e6,
        "time_train_ms": 900.0 + alg * 50,
        "time_user_ms": 90.0,
        "time_server_ms": 20.0 + alg * 30,
        "time_eval_ms": 80.0,
        "time_total_ms": 1000.0 + alg * 80,
    }


def fill(
    home: Path,
    token: str,
    api_url: str,
    n_runs: int,
    n_rounds: int,
    upto: int | None = None,
    name: str = "compare-bench",
) -> tuple[str, list[str]]:
    """Create the sweep through the API, then write every run's rounds through write_round.

    `upto`: write rounds 0..upto only and leave the runs running (lease "bench-<id>").
    """
    from lab.config import Settings
    from lab.db import make_engine, make_sessionmaker
    from lab.repository import metrics as metrics_repo
    from lab.repository import runs as runs_repo

    seeds = max(1, math.ceil(n_runs / (len(BENCH_ALGORITHMS) * len(ALPHAS))))
    grid = {"algorithm": BENCH_ALGORITHMS, "partition.alpha": ALPHAS, "seed": list(range(seeds))}
    base = {**BASE, "rounds": n_rounds}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=api_url + "/api/v1", headers=headers, timeout=60) as c:
        resp = c.post("/sweeps", json={"name": name, "base": base, "grid": grid})
        resp.raise_for_status()
        sweep = resp.json()
        runs = c.get("/runs", params={"sweep_id": sweep["id"], "limit": 500}).json()["data"]
    spec_of = {str(r["id"]): r["spec"] for r in runs}
    ids = [str(i) for i in sweep["run_ids"]][:n_runs]
    factory = make_sessionmaker(make_engine(Settings(home=home).database_url))
    rng = np.random.default_rng(0)
    for rid in ids:
        spec = spec_of[rid]
        alg = BENCH_ALGORITHMS.index(spec["algorithm"]["name"])
        acc = curve(rng, n_rounds, alg, float(spec["partition"]["alpha"]))
        lease = f"bench-{rid}"
        run_uuid = uuid.UUID(rid)
        with factory() as s, s.begin():
            runs_repo.claim(s, run_uuid, worker="bench", token=lease, device="cpu", lease_s=3600)
            for rnd in range(n_rounds + 1 if upto is None else upto + 1):
                metrics_repo.write_round(
                    s,
                    run_uuid,
                    lease,
                    round_=rnd,
                    metrics=_metrics(float(acc[rnd]), alg),
                    users=[],
                    checkpoints=[],
                    lease_s=3600,
                )
            if upto is None:
                runs_repo.finish(s, run_uuid, lease, status="succeeded", summary={})
    return str(sweep["id"]), ids


class RoundWriter(threading.Thread):
    """Adds the next round to every running run each `period` seconds, as workers would."""

    def __init__(self, home: Path, ids: list[str], start: int, period: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.home, self.ids, self.next_round, self.period = home, ids, start, period
        self.stop = threading.Event()

    def run(self) -> None:
        from lab.config import Settings
        from lab.db import make_engine, make_sessionmaker
        from lab.repository import metrics as metrics_repo

        factory = make_sessionmaker(make_engine(Settings(home=self.home).database_url))
        while not self.stop.wait(self.period):
            with factory() as s, s.begin():
                for i, rid in enumerate(self.ids):
                    a = min(0.9, 0.5 + self.next_round / 1000 + i / 1000)
                    metrics_repo.write_round(
                        s,
                        uuid.UUID(rid),
                        f"bench-{rid}",
                        round_=self.next_round,
                        metrics=_metrics(a, i % len(BENCH_ALGORITHMS)),
                        users=[],
                        checkpoints=[],
                        lease_s=3600,
                    )
            self.next_round += 1


def live_updates(page: Any, url: str, updates: int) -> list[float]:
    """ms from each refresh request leaving the page to the chart showing the new rounds."""
    page.add_init_script(UPDATES_JS)
    page.goto(url, wait_until="commit")
    page.wait_for_function(DRAWN_JS, polling="raf", timeout=120_000)
    page.wait_for_function(
        f"() => window.__changes.length > {updates + 1}", polling=200, timeout=120_000
    )
    sends: list[float] = page.evaluate("() => window.__sends")
    changes: list[float] = page.evaluate("() => window.__changes")
    out = []
    for t in changes[2:]:  # [0]: no chart yet, [1]: the first draw
        before = [s for s in sends if s < t]
        if before:
            out.append(t - before[-1])
    return out


def visit(page: Any, url: str, timeout_ms: int = 120_000) -> float:
    """Navigate to `url`; ms from navigation start until the chart's traces are drawn."""
    page.goto(url, wait_until="commit")
    handle = page.wait_for_function(DRAWN_JS, polling="raf", timeout=timeout_ms)
    return float(handle.json_value())


def main(argv: list[str] | None = None) -> int:
    """Fill, serve, measure; print the median as the last line."""
    from tests.support.stack import browser_page, lab_stack

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shots", type=Path, default=None, help="save screenshots here")
    ap.add_argument("--baseline", type=Path, default=None, help="another checkout to compare")
    ap.add_argument("--live-runs", type=int, default=20, help="running runs (0: skip)")
    ap.add_argument("--updates", type=int, default=8, help="live refreshes to time")
    args = ap.parse_args(argv)
    live_ms: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        with lab_stack(home, worker=False) as stack:
            t0 = time.perf_counter()
            sweep_id, ids = fill(home, stack.token, stack.api_url, args.runs, args.rounds)
            print(
                f"filled {len(ids)} runs x {args.rounds + 1} rounds in "
                f"{time.perf_counter() - t0:.1f} s",
                flush=True,
            )
            with httpx.Client(timeout=60) as c:
                r = c.get(
                    f"{stack.api_url}/api/v1/compare",
                    params={"run_ids": ",".join(ids), "max_points": 200},
                    headers={"Authorization": f"Bearer {stack.token}"},
                )
                r.raise_for_status()
                print(f"/compare (all metrics, 200 points): {len(r.content) / 1e6:.2f} MB")
                r = c.get(
                    f"{stack.api_url}/api/v1/compare",
                    params={"run_ids": ",".join(ids), "max_points": 200, "metrics": "test_acc"},
                    headers={"Authorization": f"Bearer {stack.token}"},
                )
                print(f"/compare (metrics=test_acc, 200 points): {len(r.content) / 1e6:.2f} MB")
            query = f"/compare?runs={','.join(ids)}"
            with contextlib.ExitStack() as extra:
                bases = {"this tree": stack.dashboard_url}
                if args.baseline:
                    bases["baseline"] = extra.enter_context(
                        baseline_dashboard(args.baseline, stack.api_url, stack.token, home)
                    )
                times: dict[str, list[float]] = {name: [] for name in bases}
                with browser_page(Path(tmp) / "profile", 1500, 1000) as page:
                    for base in bases.values():  # warm-up: each Streamlit imports its modules
                        visit(page, base + query)
                    for i in range(args.repeat):
                        for name, base in reversed(bases.items()):
                            time.sleep(CACHE_TTL_S)
                            ms = visit(page, base + query)
                            times[name].append(ms)
                            print(f"{name} visit {i + 1}: {ms:.0f} ms", flush=True)
                if args.shots:  # one Playwright at a time: after the timing browser closed
                    shoot(stack.dashboard_url, sweep_id, args.shots, Path(tmp) / "shots")
            if args.live_runs:
                live_id, live_ids = fill(
                    home,
                    stack.token,
                    stack.api_url,
                    args.live_runs,
                    args.rounds,
                    upto=args.rounds // 2,
                    name="compare-live",
                )
                writer = RoundWriter(home, live_ids, args.rounds // 2 + 1)
                writer.start()
                try:
                    with browser_page(Path(tmp) / "live-profile", 1500, 1000) as page:
                        live_ms = live_updates(
                            page, f"{stack.dashboard_url}/compare?sweep={live_id}", args.updates
                        )
                finally:
                    writer.stop.set()
                    writer.join(timeout=10)
                for i, ms in enumerate(live_ms):
                    print(f"live update {i + 1}: {ms:.0f} ms", flush=True)
    mine = statistics.median(times["this tree"])
    if "baseline" in times:
        base_ms = statistics.median(times["baseline"])
        print(f"baseline compare page: {base_ms:.0f} ms (median of {len(times['baseline'])})")
        print(f"ratio this tree / baseline: {mine / base_ms:.2f}")
    if live_ms:
        print(
            f"compare refresh ({args.live_runs} running runs): "
            f"{statistics.median(live_ms):.0f} ms per update "
            f"(median of {len(live_ms)}, max {max(live_ms):.0f})"
        )
    print(f"compare page: {mine:.0f} ms (median of {len(times['this tree'])})")
    return 0


@contextlib.contextmanager
def baseline_dashboard(root: Path, api_url: str, token: str, home: Path) -> Iterator[str]:
    """A second Streamlit dashboard served from the checkout `root`, on the same API."""
    from tests.support.dashboard_lab import free_port
    from tests.support.stack import _stop, _wait_http

    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "FEDGEN_API_URL": api_url,
        "FEDGEN_TOKEN": token,
        "FEDGEN_HOME": str(home),
    }
    log = (home / "logs" / "baseline-dashboard.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(root / "dashboard" / "streamlit_app.py"),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        env=env,
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_http(f"http://127.0.0.1:{port}/_stcore/health", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)


def shoot(dashboard_url: str, sweep_id: str, out: Path, profile: Path) -> None:
    """Screenshots of Compare on the whole sweep: grouped (default) and one line per run."""
    from tests.support.stack import browser_page

    out.mkdir(parents=True, exist_ok=True)
    # Tall enough for the whole page: Streamlit scrolls inside its own container.
    with browser_page(profile, 1500, 1900) as page:
        for name, query in (("grouped", ""), ("ungrouped", "&group=none")):
            visit(page, f"{dashboard_url}/compare?sweep={sweep_id}{query}")
            page.wait_for_timeout(2500)
            path = out / f"compare-50-{name}.png"
            page.screenshot(path=str(path), full_page=True)
            print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
