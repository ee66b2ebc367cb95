"""Screenshots of the pages issue 28 changed: Settings (API tokens), Trash, Runs in every state.

Run: `.venv/bin/python -m scripts.screens.issue28_screenshots [OUT_DIR]` (about a minute, no
network; default OUT_DIR /tmp/screens28). One lab (API + dashboard, no worker): runs are put
in their states by the worker's own `execute_run` with the shared fake runner (two succeeded,
one failed in round 3, one running whose worker died after round 2, one queued); a run and a
sweep are deleted (the Trash); two tokens are made through the API, one revoked, and one more
through the Settings page's form (its secret shown once). Live with its data files opened is
taken by the newcomer's walk-through (test_browser_newcomer.py), whose runs are real.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from tests.support import browse
from tests.support.dashboard_lab import tiny_spec
from tests.support.fakes import FakeRunner, Killed
from tests.support.stack import Stack, browser_page, lab_stack
from worker.claimed_run import execute_run


def _die_after(round_: int) -> Any:
    def hook(r: int) -> None:
        if r == round_:
            raise Killed(r)

    return hook


def _arrange(stack: Stack) -> None:
    """Runs in each state, a trashed run and sweep, an active and a revoked token."""
    settings = Settings(home=stack.home, database_url=f"sqlite:///{stack.home / 'lab.db'}")
    engine = make_engine(settings.database_url)
    factory = make_sessionmaker(engine)

    def execute(run_id: str, runner: FakeRunner) -> None:
        try:
            execute_run(run_id, factory, runner=runner, settings=settings, worker_name="w1@lab")
        except Killed:  # the worker died: the run stays running with its lease
            pass

    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
        base = tiny_spec(rounds=6)
        grid = {"algorithm": ["fedavg", "fedprox"], "partition.alpha": [0.1, 1.0]}
        sweep = c.post("/sweeps", json={"name": "alpha", "base": base, "grid": grid})
        ok1, ok2, bad, live = sorted(sweep.raise_for_status().json()["run_ids"])
        execute(ok1, FakeRunner())
        execute(ok2, FakeRunner())
        execute(bad, FakeRunner(fail_at=3))
        execute(live, FakeRunner(on_round=_die_after(2)))
        c.post("/runs", json={"spec": tiny_spec(seed=5)}).raise_for_status()  # queued
        gone = c.post("/runs", json={"spec": tiny_spec(seed=9)}).raise_for_status().json()
        execute(gone["id"], FakeRunner())
        c.delete(f"/runs/{gone['id']}").raise_for_status()
        old = c.post("/sweeps", json={"name": "old-try", "base": base, "grid": {"seed": [0, 1]}})
        c.delete(f"/sweeps/{old.raise_for_status().json()['id']}").raise_for_status()
        c.post("/tokens", json={"name": "laptop", "expires_days": 30}).raise_for_status()
        ci = c.post("/tokens", json={"name": "CI"}).raise_for_status().json()
        c.delete(f"/tokens/{ci['id']}").raise_for_status()
    engine.dispose()


def main(out: Path = Path("/tmp/screens28")) -> int:
    """Start the lab, arrange the states, screenshot Settings, Trash and Runs."""
    with tempfile.TemporaryDirectory() as tmp, lab_stack(Path(tmp) / "home", worker=False) as stack:
        _arrange(stack)
        base = stack.dashboard_url
        with browser_page(Path(tmp) / "profile", 1600, 1600) as opened:
            page: Any = opened
            browse.visit(page, base, "settings", browse.TABLE)
            browse.shot(page, out, "settings-tokens")
            page.get_by_label("Name", exact=True).fill("notebook")
            page.get_by_role("button", name="Create token").click()
            page.get_by_text("It is not shown again").wait_for(timeout=30_000)
            page.locator(browse.IDLE).wait_for(timeout=30_000)
            browse.shot(page, out, "settings-token-created")
            browse.visit(page, base, "trash", browse.TABLE)
            browse.shot(page, out, "trash")
            browse.visit(page, base, "runs", browse.TABLE)
            browse.shot(page, out, "runs-all-states")
            raised = browse.exceptions(page)
        problems = browse.tracebacks(stack.home / "logs" / "dashboard.log")
    sys.stdout.write(f"wrote {out}; exception boxes: {raised}; tracebacks: {problems}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/screens28")))
