"""Make docs/img/compare.png: a real sweep on the synthetic dataset, shown on the Compare page.

Run: `.venv/bin/python -m scripts.screens.screenshots` (a few minutes, CPU only, no network).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.stack import ROOT, browser_page, lab_stack

BASE = {
    "data": {"name": "synthetic", "synthetic_samples": 1000},
    "partition": {"num_users": 10, "alpha": 0.1},
    "rounds": 20,
    "users_per_round": 3,
    "local_steps": 3,
    "batch_size": 16,
    "lr": 0.005,
    "checkpoint_every": 0,
}
GRID = {"algorithm": ["fedavg", "fedprox", "fedgen"], "seed": [0, 1, 2]}


def main(out: Path = ROOT / "docs" / "img" / "compare.png") -> int:
    """Start the lab, run the sweep with the real worker, screenshot the Compare page."""
    with tempfile.TemporaryDirectory() as tmp, lab_stack(Path(tmp) / "home") as stack:
        headers = {"Authorization": f"Bearer {stack.token}"}
        with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
            sweep = c.post("/sweeps", json={"name": "synthetic-demo", "base": BASE, "grid": GRID})
            sweep.raise_for_status()
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                runs = c.get("/runs", params={"sweep_id": sweep.json()["id"]}).json()["data"]
                if all(r["status"] in ("succeeded", "failed", "cancelled") for r in runs):
                    break
                time.sleep(1)
        with browser_page(Path(tmp) / "profile", 1500, 1150) as page:
            page.goto(f"{stack.dashboard_url}/compare?sweep={sweep.json()['id']}")  # type: ignore[attr-defined]
            page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)  # type: ignore[attr-defined]
            page.wait_for_timeout(2000)  # type: ignore[attr-defined]
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=True)  # type: ignore[attr-defined]
    sys.stdout.write(f"wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
