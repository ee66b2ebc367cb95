"""Screenshots of the Runs table with runs in every state and Table 2 style runs that differ
only in gen_batch_size and lr (issue 20: "runs you can tell apart").

The real worker (one slot) runs three short FedGen runs (B_G 32/64, lr 0.01/0.05) to the end,
fails one (no dataset files), then holds a long run while two more wait queued. One run gets
a note and tags through PATCH. Writes runs-table.png (the page), runs-table-picked.png (one
run ticked: its details, note and tags) and runs.csv (the CSV the page offers).

Run: `.venv/bin/python -m scripts.screens.runs_table_screenshots /tmp/shots` (about 2 min, CPU).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.browse import tick_row
from tests.support.stack import browser_page, lab_stack

BASE: dict[str, Any] = {
    "data": {"name": "synthetic", "synthetic_samples": 600},
    "partition": {"num_users": 6, "alpha": 0.1},
    "rounds": 4,
    "users_per_round": 3,
    "local_steps": 2,
    "batch_size": 16,
    "checkpoint_every": 0,
    "algorithm": {"name": "fedgen"},
}
TABLE2 = [(32, 0.01), (64, 0.01), (32, 0.05)]  # (gen_batch_size, lr)


def _spec(**changes: Any) -> dict[str, Any]:
    spec = {**BASE, **changes}
    spec["algorithm"] = {**BASE["algorithm"], **changes.get("algorithm", {})}
    return spec


def _wait(c: httpx.Client, want: dict[str, int], timeout: float = 240) -> list[dict[str, Any]]:
    """Poll GET /runs until at least `want[status]` runs are in each status."""
    deadline = time.monotonic() + timeout
    runs: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        runs = c.get("/runs", params={"limit": 100}).json()["data"]
        have = {s: sum(r["status"] == s for r in runs) for s in want}
        if all(have[s] >= n for s, n in want.items()):
            return runs
        time.sleep(1)
    raise TimeoutError(f"runs never reached {want}: {[r['status'] for r in runs]}")


def main(out: Path) -> int:
    """Start the lab, bring runs into each state, screenshot the Runs table."""
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as tmp,
        lab_stack(Path(tmp) / "home", worker_args=["--slots", "1"]) as stack,
    ):
        headers = {"Authorization": f"Bearer {stack.token}"}
        with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
            for gbs, lr in TABLE2:
                c.post("/runs", json={"spec": _spec(algorithm={"gen_batch_size": gbs}, lr=lr)})
            broken = {
                **BASE["data"],
                "name": "mnist",
                "root": "/usr/share/datasets/nowhere",  # inside the default data roots
            }  # no files: fails at once
            c.post("/runs", json={"spec": _spec(data=broken)})
            first = _wait(c, {"succeeded": 3, "failed": 1})
            done = next(r for r in first if r["status"] == "succeeded")
            c.patch(
                f"/runs/{done['id']}",
                json={"note": "B_G 64 is no better; keep 32", "tags": ["table2", "mnist"]},
            ).raise_for_status()
            c.post("/runs", json={"spec": _spec(rounds=5000, seed=1)}).raise_for_status()
            _wait(c, {"running": 1})
            for seed in (2, 3):
                c.post("/runs", json={"spec": _spec(seed=seed, lr=0.05)}).raise_for_status()
            runs = _wait(c, {"queued": 2, "running": 1})
            (out / "runs.csv").write_text(_page_csv(runs))
        with browser_page(Path(tmp) / "profile", 1500, 1100) as page:
            page.goto(f"{stack.dashboard_url}/runs")  # type: ignore[attr-defined]
            table = page.locator('[data-testid="stDataFrame"]').first  # type: ignore[attr-defined]
            table.wait_for(timeout=60_000)
            page.wait_for_timeout(3000)  # type: ignore[attr-defined]
            page.screenshot(path=str(out / "runs-table.png"))  # type: ignore[attr-defined]
            tick_row(page, table, [r["id"] for r in runs].index(done["id"]))
            page.get_by_role("button", name="Save note and tags").wait_for(timeout=30_000)  # type: ignore[attr-defined]
            page.wait_for_timeout(1500)  # type: ignore[attr-defined]
            page.screenshot(path=str(out / "runs-table-picked.png"), full_page=True)  # type: ignore[attr-defined]
    sys.stdout.write(f"wrote {out}\n")
    return 0


def _page_csv(runs: list[dict[str, Any]]) -> str:
    """The CSV the page's Export button offers, built the page's way from the same runs."""
    from datetime import UTC, datetime

    from dashboard.runs_page import runs_csv

    return str(runs_csv.csv_frame(runs, datetime.now(UTC)).to_csv(index=False))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/shots")))
