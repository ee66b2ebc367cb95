"""Screenshots of the Paper page: study sweeps filled by the scripted runner, in headless Chromium.

Run: `.venv/bin/python -m scripts.screens.study_screenshots [OUT_DIR]` (about a minute, no
network). The runs are the dashboard tests' scripted runner (fast, plausible curves and
timings), so the figures show how the page reads, not results of the simulator.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx

from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from tests.support.fakes import FakeRunner
from tests.support.stack import ROOT, browser_page, lab_stack
from worker.claimed_run import execute_run

# Every study, on its paper dataset (where the paper has numbers, so verdicts show), small.
LAUNCH = {
    "table3": {"dataset": "emnist-letters", "seeds": 2, "rounds": 4},
    "table1": {"dataset": "mnist", "seeds": 2, "rounds": 8},
    "table2": {"seeds": 2, "rounds": 6},
    "table4": {"seeds": 1, "rounds": 6},
    "fig5-stragglers": {"seeds": 1, "rounds": 6},
    "fig5-mlp-vs-cnn": {"seeds": 1, "rounds": 6},
    "fig5-delay": {"seeds": 2, "rounds": 6},
}


def main(out_dir: Path = ROOT / "test-artifacts") -> int:
    """Start API + dashboard, launch and run the studies, screenshot each study's page."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, lab_stack(Path(tmp) / "home", worker=False) as stack:
        settings = Settings(home=stack.home)
        engine = make_engine(settings.database_url)
        factory = make_sessionmaker(engine)
        headers = {"Authorization": f"Bearer {stack.token}"}
        with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=60) as c:
            for name, body in LAUNCH.items():
                sweep = c.post(f"/studies/{name}", json=body).raise_for_status().json()["sweep"]
                ids = sweep["run_ids"]
                # table1: leave a quarter of the runs queued so the page shows progress.
                done = ids if name == "table3" else ids[: len(ids) * 3 // 4]
                for run_id in done:
                    execute_run(run_id, factory, runner=FakeRunner(), settings=settings)
        engine.dispose()
        with browser_page(Path(tmp) / "profile", 1500, 1400) as page:
            for name in LAUNCH:
                page.goto(f"{stack.dashboard_url}/paper?study={name}")  # type: ignore[attr-defined]
                page.get_by_role("heading", name="Paper", exact=True).wait_for(timeout=60_000)  # type: ignore[attr-defined]
                page.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=60_000)  # type: ignore[attr-defined]
                for _ in range(120):  # until no placeholder skeleton is left
                    if page.locator('[data-testid="stSkeleton"]').count() == 0:  # type: ignore[attr-defined]
                        break
                    page.wait_for_timeout(500)  # type: ignore[attr-defined]
                page.wait_for_timeout(3000)  # type: ignore[attr-defined]
                path = out_dir / f"paper-{name}.png"
                page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
                sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "test-artifacts"))
