"""Screenshots of every dashboard page while runs are queued, running, failed and finished.

Run: `.venv/bin/python -m scripts.screens.all_pages_screenshots OUT_DIR` (a few minutes, CPU,
no network). One real lab (API, a one-slot worker, the dashboard): a sweep of small synthetic
runs (FedGen and FedAvg × two seeds) that the worker finishes, then a long FedGen run that it
is running while every page is taken, one more run left queued behind it, and a run that
fails (MNIST from an empty data folder). Each page is saved as `OUT_DIR/<page>.png`.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.support import browse
from tests.support.browse import CHART, TABLE
from tests.support.stack import browser_page, lab_stack

BASE = {
    "data": {"name": "synthetic", "synthetic_samples": 1000},
    "partition": {"num_users": 10, "alpha": 0.1},
    "rounds": 60,
    "users_per_round": 3,
    "local_steps": 3,
    "batch_size": 16,
    "lr": 0.005,
    "checkpoint_every": 0,
}
GRID = {"algorithm": ["fedgen", "fedavg"], "seed": [0, 1]}
LONG_ROUNDS = 3000  # minutes of training: running while the pages are taken
HEADING = '[data-testid="stMain"] h1'
FAST = {"FEDGEN_REAPER_S": "1", "FEDGEN_HEARTBEAT_S": "1"}


def _wait_for_mix(c: httpx.Client, sweep_id: str, long_id: str, bad_id: str) -> None:
    """Until the sweep's runs finished, the long run is past round 10 and the bad run failed."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        runs = c.get("/runs", params={"sweep_id": sweep_id}).json()["data"]
        long = c.get(f"/runs/{long_id}").json()
        failed = c.get(f"/runs/{bad_id}").json()["status"] == "failed"
        swept = all(r["status"] == "succeeded" for r in runs)
        if swept and long["status"] == "running" and long["current_round"] >= 10 and failed:
            return
        time.sleep(1)
    raise TimeoutError("the lab never reached finished + running + queued + failed")


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "no-mnist").mkdir()
        env = {**FAST, "FEDGEN_DATA_ROOTS": str(root)}
        with lab_stack(root / "home", worker_args=["--slots", "1"], env_extra=env) as stack:
            headers = {"Authorization": f"Bearer {stack.token}"}
            with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
                bad = {
                    "data": {"name": "mnist", "root": str(root / "no-mnist")},
                    "partition": {"num_users": 4},
                    "rounds": 2,
                    "users_per_round": 2,
                }
                bad_id = c.post("/runs", json={"spec": bad, "priority": "high"}).json()["id"]
                body = {"name": "shots", "base": BASE, "grid": GRID}
                sweep_id = c.post("/sweeps", json=body).raise_for_status().json()["id"]
                long = {**BASE, "algorithm": {"name": "fedgen"}, "rounds": LONG_ROUNDS, "seed": 7}
                long_id = c.post("/runs", json={"spec": long}).raise_for_status().json()["id"]
                queued = {**BASE, "seed": 8}
                c.post("/runs", json={"spec": queued, "priority": "low"}).raise_for_status()
                _wait_for_mix(c, sweep_id, long_id, bad_id)
            base = stack.dashboard_url
            pages = [
                ("runs", "runs", TABLE),
                ("live-running", f"live&run={long_id}", CHART),
                ("compare", f"compare&sweep={sweep_id}", CHART),
                ("tables", f"tables&sweep={sweep_id}", TABLE),
                ("lab", "lab", TABLE),
                ("submit", "submit", HEADING),
                ("paper", "paper&study=table1", HEADING),
                ("inspect", f"inspect&run={long_id}", HEADING),
                ("trash", "trash", HEADING),
                ("settings", "settings", HEADING),
            ]
            with browser_page(root / "profile", 1600, 1800) as page:
                for name, query, ready in pages:
                    browse.visit(page, base, query, ready)
                    browse.shot(page, out, name)
                    for box in browse.exceptions(page):
                        sys.stdout.write(f"{name}: exception box: {box}\n")
    sys.stdout.write(f"wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("shots")))
