"""Screenshots of the Runs and Live pages mid-sweep (some runs done, one running, some queued).

Run: `.venv/bin/python -m scripts.screens.runs_live_screenshots OUT_DIR` (a few minutes, CPU).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.stack import browser_page, lab_stack

BASE = {
    "data": {"name": "synthetic", "synthetic_samples": 1000},
    "partition": {"num_users": 10, "alpha": 0.1},
    "rounds": 40,
    "users_per_round": 3,
    "local_steps": 3,
    "batch_size": 16,
    "lr": 0.005,
    "checkpoint_every": 0,
}
GRID = {"algorithm": ["fedgen", "fedavg"], "seed": [0, 1, 2]}


def main(out: Path) -> int:
    """Start the lab, run part of a sweep with the real worker, screenshot Runs and Live."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, lab_stack(Path(tmp) / "home") as stack:
        headers = {"Authorization": f"Bearer {stack.token}"}
        with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
            sweep = c.post("/sweeps", json={"name": "shots", "base": BASE, "grid": GRID})
            sweep.raise_for_status()
            sweep_id = sweep.json()["id"]
            deadline = time.monotonic() + 400
            running: dict = {}
            while time.monotonic() < deadline:
                runs = c.get("/runs", params={"sweep_id": sweep_id}).json()["data"]
                done = [r for r in runs if r["status"] == "succeeded"]
                live = [r for r in runs if r["status"] == "running"]
                if len(done) >= 2 and live and live[0]["current_round"] >= 10:
                    running = live[0]
                    break
                time.sleep(1)
            fedgen = next(r for r in runs if r["spec"]["algorithm"]["name"] == "fedgen")
        with browser_page(Path(tmp) / "profile", 1600, 2300) as page:
            page.goto(f"{stack.dashboard_url}/runs")  # type: ignore[attr-defined]
            page.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=60_000)  # type: ignore[attr-defined]
            page.wait_for_timeout(2500)  # type: ignore[attr-defined]
            page.screenshot(path=str(out / "runs.png"), full_page=True)  # type: ignore[attr-defined]
            if running:
                page.goto(f"{stack.dashboard_url}/live?run={running['id']}")  # type: ignore[attr-defined]
                page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)  # type: ignore[attr-defined]
                page.wait_for_timeout(6000)  # type: ignore[attr-defined]
                page.screenshot(path=str(out / "live-running.png"), full_page=True)  # type: ignore[attr-defined]
            page.goto(f"{stack.dashboard_url}/live?run={fedgen['id']}")  # type: ignore[attr-defined]
            page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)  # type: ignore[attr-defined]
            page.wait_for_timeout(4000)  # type: ignore[attr-defined]
            page.screenshot(path=str(out / "live-fedgen.png"), full_page=True)  # type: ignore[attr-defined]
    sys.stdout.write(f"wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("shots")))
