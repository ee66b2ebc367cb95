"""Every page in every run state, in headless Chromium: no Streamlit exception box, no
server-side traceback, and a failed run's error and round on Live and Runs.

One real lab (API + dashboard, no worker). Runs are put in each state the issue names through
the API and the worker's own `execute_run` against the lab's SQLite database (the shared fake
runner: deterministic rounds, no training): queued (no worker), claimed (a worker took it and
died before round 0), running (rounds 0-3 stored, its worker gone), cancelling (running with a
cancel asked), failed (in round 3; and before round 0: a dataset no worker could load, five
claims), cancelled, succeeded and deleted (a link to a run that no longer exists). A study
sweep (Paper and Sweep tables) holds six of them in mixed states.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import browse
from tests.support.dashboard_lab import tiny_spec
from tests.support.fakes import die_after
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, Stack, browser_page, execute_here, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
STUDY = "table2"  # FedAvg and five FedGen generator presets: 6 runs with one seed
# What a page draws once its data is in (the `ready` of `_settle`).
TABLE, CHART = '[data-testid="stDataFrame"]', ".js-plotly-plot"
PROGRESS, ALERT = '[data-testid="stProgress"]', '[data-testid="stAlert"]'


def _missing_mnist(*_args: Any, **_kwargs: Any) -> Any:
    """A runner whose dataset load fails as fedgen's does when the files are missing."""
    from fedgen.data.common import DatasetError

    raise DatasetError(
        "mnist: dataset files not found. Searched: /usr/share/datasets/nowhere/MNIST/raw. Expected files: "
        "train-images-idx3-ubyte. To get them: set data.download: true."
    )


def _put_in_states(stack: Stack) -> dict[str, str]:
    """state name -> run id, every state the issue names; "sweep" -> the study's sweep id."""
    from tests.support.fakes import FakeRunner

    headers = {"Authorization": f"Bearer {stack.token}"}
    ids: dict[str, str] = {}
    with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
        launched = c.post(
            f"/studies/{STUDY}", json={"dataset": "synthetic", "seeds": 1, "rounds": 6}
        )
        launched.raise_for_status()
        sweep_id = launched.json()["sweep"]["id"]
        sweep_runs = sorted(launched.json()["sweep"]["run_ids"])
        ids["sweep"] = sweep_id
        # The study's six runs: two succeeded, one failed in round 3, one running at round 3
        # (its worker died), one claimed (died before round 0), one queued.
        ok1, ok2, bad, live, claimed, queued = sweep_runs
        assert execute_here(stack, ok1, FakeRunner()) == "succeeded"
        assert execute_here(stack, ok2, FakeRunner()) == "succeeded"
        assert execute_here(stack, bad, FakeRunner(fail_at=3)) == "failed"
        assert execute_here(stack, live, FakeRunner(on_round=die_after(3))) == "died"
        assert execute_here(stack, claimed, FakeRunner(kill_at=0)) == "died"
        ids |= {
            "succeeded": ok1,
            "failed": bad,
            "running": live,
            "claimed": claimed,
            "queued": queued,
        }

        def submit(**changes: Any) -> str:
            return str(
                c.post("/runs", json={"spec": tiny_spec(**changes)}).raise_for_status().json()["id"]
            )

        ids["cancelling"] = submit(seed=11, rounds=8)
        assert execute_here(stack, ids["cancelling"], FakeRunner(on_round=die_after(2))) == "died"
        c.post(f"/runs/{ids['cancelling']}/cancel").raise_for_status()
        ids["cancelled"] = submit(seed=12)
        c.post(f"/runs/{ids['cancelled']}/cancel").raise_for_status()
        # A dataset no worker can load: handed back on each claim, failed on the fifth.
        # (A data.root inside the default data roots, /usr/share/datasets, without the files.)
        nowhere = "/usr/share/datasets/nowhere"
        ids["failed-early"] = submit(seed=13, data={"name": "mnist", "root": nowhere})
        outcomes = [execute_here(stack, ids["failed-early"], _missing_mnist) for _ in range(5)]
        assert outcomes[-1] == "failed", outcomes
        ids["deleted"] = submit(seed=14)
        c.delete(f"/runs/{ids['deleted']}").raise_for_status()
        states = {
            k: c.get(f"/runs/{v}").json() for k, v in ids.items() if k not in ("sweep", "deleted")
        }
    # Arrange's own check: each run is in the state it stands for.
    assert {k: r["status"] for k, r in states.items()} == {
        "succeeded": "succeeded",
        "failed": "failed",
        "running": "running",
        "claimed": "running",
        "queued": "queued",
        "cancelling": "running",
        "cancelled": "cancelled",
        "failed-early": "failed",
    }
    assert states["claimed"]["current_round"] == -1
    assert states["running"]["current_round"] == 3
    assert states["cancelling"]["cancel_requested"] is True
    assert states["failed-early"]["current_round"] == -1
    return ids


def _settle(page: Any, ready: str) -> None:
    """Wait for the page's `ready` element (drawn once its data is in), then for its script
    run to end (Streamlit's own run state on the app element), fragments included."""
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=30_000)
    page.locator(ready).first.wait_for(timeout=30_000)
    page.locator(browse.IDLE).wait_for(timeout=30_000)
    page.wait_for_timeout(200)  # a fragment's rerun that was just due
    page.locator(browse.IDLE).wait_for(timeout=30_000)


@pytest.mark.timeout(240)
def test_every_page_in_every_state(tmp_path: Path) -> None:
    """Runs, Live, Compare, Inspect, Paper, Sweep tables and Lab over runs in every state."""
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    with lab_stack(tmp_path / "home", worker=False) as stack:
        ids = _put_in_states(stack)
        runs = {k: v for k, v in ids.items() if k != "sweep"}
        raised: dict[str, list[str]] = {}
        texts: dict[str, str] = {}
        base = stack.dashboard_url
        with browser_page(tmp_path / "profile", 1500, 1400) as page:

            def visit(name: str, path: str, ready: str) -> None:
                page.goto(f"{base}/?page={path}")
                _settle(page, ready)
                raised[name] = browse.exceptions(page)
                texts[name] = browse.main_text(page)

            # Execute
            visit("runs", "runs", TABLE)
            for state, rid in runs.items():
                visit(f"live:{state}", f"live&run={rid}", f"{PROGRESS}, {ALERT}")
                visit(f"inspect:{state}", f"inspect&run={rid}", f"{ALERT}, {CHART}")
            visit("compare:sweep", f"compare&sweep={ids['sweep']}", CHART)
            visit("compare:runs", f"compare&runs={','.join(runs.values())}", CHART)
            visit("paper", f"paper&study={STUDY}&sweep={ids['sweep']}", TABLE)
            visit("tables", f"tables&sweep={ids['sweep']}", TABLE)
            visit("lab", "lab", ALERT)
        tracebacks = browse.tracebacks(stack.home / "logs" / "dashboard.log")
    # Assert
    assert {k: v for k, v in raised.items() if v} == {}
    assert tracebacks == []
    # A failed run's error and the round it stopped at, on Live and on Runs.
    assert "failed before round 0: mnist: dataset files not found" in texts["live:failed-early"]
    assert "failed in round 3 of 6: RuntimeError: simulated failure" in texts["live:failed"]
    # Runs lists each failed run's whole message above the table (one line after "Failed …:").
    runs_text = " ".join(texts["runs"].split()).lower()
    assert "failed before round 0: mnist: dataset files not found" in runs_text
    assert "failed in round 3 of 6: runtimeerror: simulated failure" in runs_text
    # Each state said as such.
    assert "switches to the curves by itself" in texts["live:queued"]
    assert "claimed by w1@lab-host" in texts["live:claimed"]
    assert "running · round 3 of 6" in texts["live:running"]
    assert "cancelling" in texts["live:cancelling"]
    assert "cancelled before round 0" in texts["live:cancelled"]
    assert "succeeded · round 6 of 6" in texts["live:succeeded"]
    assert all("no longer exists" in texts[f"{p}:deleted"] for p in ("live", "inspect"))
    assert "has not started yet" in texts["inspect:queued"]
    assert "3/6 runs finished" in texts["paper"]
    assert "3/6 runs finished" in texts["tables"]
