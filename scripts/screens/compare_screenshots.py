"""Screenshots of Compare mid-sweep: finished, running and queued runs in one live chart.

Run: `.venv/bin/python -m scripts.screens.compare_screenshots OUT_DIR` (a few minutes, CPU).
Starts the lab (API + worker + dashboard), submits a 6-run synthetic sweep, waits until
some runs have finished while others run, opens `/compare?sweep=<id>` (grouped, then one
line per run), reads the chart's traces from the DOM twice a few seconds apart (the
running runs' rounds must grow without a reload) and saves the screenshots.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.stack import browser_page, lab_stack

BASE = {
    "data": {"name": "synthetic", "synthetic_samples": 2000, "synthetic_classes": 20},
    "partition": {"num_users": 10, "alpha": 0.05},
    "rounds": 300,
    "users_per_round": 3,
    "local_steps": 3,
    "batch_size": 16,
    "lr": 0.0005,
    "checkpoint_every": 0,
}
GRID = {"algorithm": ["fedgen", "fedavg"], "seed": [0, 1, 2]}
# What a test reads from the DOM: each trace's meta (kind mean / run / running / stopped).
TRACES_JS = """() => {
  const gd = document.querySelectorAll('.js-plotly-plot')[0];
  if (!gd || !gd.data) return null;
  return gd.data.map(t => ({name: t.name, meta: t.meta || null,
                            x: t.x ? (t.x.length !== undefined ? t.x.length : Object.keys(t.x).join('+')) : null}));
}"""


def say(*parts: object) -> None:
    """One line on stdout, at once."""
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def running_rounds(traces: list[dict[str, Any]]) -> dict[str, int]:
    """Run id -> the round each running run has reached, from the chart's "running" trace."""
    for t in traces:
        if (t.get("meta") or {}).get("kind") == "running":
            return dict(t["meta"]["rounds"])
    return {}


def main(out: Path) -> int:
    """Start the lab, run part of a sweep, screenshot Compare while it runs."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, lab_stack(Path(tmp) / "home") as stack:
        headers = {"Authorization": f"Bearer {stack.token}"}
        with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
            sweep = c.post("/sweeps", json={"name": "live-compare", "base": BASE, "grid": GRID})
            sweep.raise_for_status()
            sweep_id = sweep.json()["id"]
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                runs = c.get("/runs", params={"sweep_id": sweep_id}).json()["data"]
                done = [r for r in runs if r["status"] == "succeeded"]
                live = [r for r in runs if r["status"] == "running"]
                if done and live and min(r["current_round"] for r in live) >= 20:
                    break
                time.sleep(1)
            say("statuses:", sorted((r["status"], r["current_round"]) for r in runs))
        with browser_page(Path(tmp) / "profile", 1500, 2200) as page:
            for name, query in (("grouped", ""), ("per-run", "&group=none")):
                page.goto(f"{stack.dashboard_url}/compare?sweep={sweep_id}{query}")  # type: ignore[attr-defined]
                page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)  # type: ignore[attr-defined]
                page.wait_for_timeout(2500)  # type: ignore[attr-defined]
                before = page.evaluate(TRACES_JS)  # type: ignore[attr-defined]
                page.screenshot(path=str(out / f"compare-mid-sweep-{name}.png"), full_page=True)  # type: ignore[attr-defined]
                page.wait_for_timeout(6000)  # type: ignore[attr-defined]
                after = page.evaluate(TRACES_JS)  # type: ignore[attr-defined]
                page.screenshot(
                    path=str(out / f"compare-mid-sweep-{name}-later.png"), full_page=True
                )  # type: ignore[attr-defined]
                say(name, "legend:", json.dumps([t["name"] for t in after]))
                say(name, "x per trace:", json.dumps([t["x"] for t in after]))
                say(name, "running rounds before:", running_rounds(before))
                say(name, "running rounds 6 s later:", running_rounds(after))
                errors = page.locator('[data-testid="stException"]').count()  # type: ignore[attr-defined]
                say(name, "exception elements:", errors)
    sys.stdout.write(f"wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/shots/compare")))
