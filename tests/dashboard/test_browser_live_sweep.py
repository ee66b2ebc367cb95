"""A sweep watched live in the browser, without reload (issue 19's first "Done when").

One real lab (API, a `--slots 2` worker, dashboard). A 6-run study sweep (Table 2 on
Fashion-MNIST, one seed, a few rounds: FedAvg and five FedGen generators) runs while three
tabs stay open on it: Live on a run that is still queued (it shows queued, then running),
the Paper page (its progress advances), and Compare of the sweep (its curves grow while runs
are still running: the plotly figure's data read in the page). A run whose dataset no worker
can load (mnist from an empty data.root) fails for real (five hand-backs) and Live says why.
No tab ever shows a Streamlit exception box, and the dashboard's log holds no traceback.

With FEDGEN_SHOTS=<folder> it also saves screenshots on the way: Live queued, Live running,
Paper mid-sweep, Compare mid-sweep, Live failed, Runs with the failed run.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import browse
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, browser_page, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FASHION = Path("/usr/share/datasets/fashion-mnist")
ROUNDS = 8
# A dead or handed-back run goes out again within a second; hand-backs come quickly.
FAST = {"FEDGEN_REAPER_S": "1", "FEDGEN_HEARTBEAT_S": "1"}
CURVES = """() => {
  const plot = document.querySelectorAll('.js-plotly-plot')[0];
  if (!plot || !plot.data) return -1;
  // x as plotly.py sends it: a list, or a typed array as {dtype, bdata (base64)}
  const kinds = {f8: Float64Array, f4: Float32Array, i4: Int32Array, i2: Int16Array,
                 i1: Int8Array, u4: Uint32Array, u2: Uint16Array, u1: Uint8Array};
  const values = (x) => {
    if (!x) return [];
    if (x.bdata !== undefined) {
      const bin = atob(x.bdata), bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return Array.from(new kinds[x.dtype](bytes.buffer));
    }
    return Array.from(x);
  };
  let last = -1;
  for (const t of plot.data) for (const x of values(t.x)) if (typeof x === 'number') last = Math.max(last, x);
  return last;
}"""  # the last round any curve of the chart reaches


def _open(ctx: Any, url: str, ready: str) -> Any:
    page = ctx.new_page()
    page.goto(url)
    page.locator(ready).first.wait_for(timeout=60_000)
    return page


def _shot(page: Any, name: str, taken: set[str]) -> None:
    """Save `name`.png once under FEDGEN_SHOTS, when set (for people to look at)."""
    folder = os.environ.get("FEDGEN_SHOTS")
    if folder and name not in taken:
        taken.add(name)
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(3000)  # the charts drawn
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def _progress(page: Any) -> str:
    bar = page.locator('[data-testid="stProgress"]').first
    return str(bar.inner_text()) if bar.count() else ""


@pytest.mark.timeout(480)
def test_sweep_watched_live(tmp_path: Path) -> None:
    """Live queued -> running, Paper progress, Compare curves growing; a failed run's error."""
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    needs(FASHION.is_dir(), f"Debian's Fashion-MNIST at {FASHION}")
    empty = tmp_path / "no-mnist"
    empty.mkdir()
    args = ["--slots", "2", "--threads", "1"]
    roots = {"FEDGEN_DATA_ROOTS": str(tmp_path)}  # the failing run's empty root lies inside
    with lab_stack(tmp_path / "home", worker_args=args, env_extra={**FAST, **roots}) as stack:
        headers = {"Authorization": f"Bearer {stack.token}"}
        api = httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30)
        # Arrange: the failing run first (high priority: it goes before the sweep), then the sweep.
        bad_spec = {
            "data": {"name": "mnist", "root": str(empty)},
            "partition": {"num_users": 4},
            "rounds": 3,
            "users_per_round": 2,
        }
        bad = api.post("/runs", json={"spec": bad_spec, "priority": "high"}).raise_for_status()
        bad_id = bad.json()["id"]
        launched = api.post(
            "/studies/table2", json={"dataset": "fashion-mnist", "seeds": 1, "rounds": ROUNDS}
        ).raise_for_status()
        sweep_id = launched.json()["sweep"]["id"]
        runs = api.get("/runs", params={"sweep_id": sweep_id}).raise_for_status().json()["data"]
        # The run that starts last: still queued when its Live page opens.
        last = max(runs, key=lambda r: r.get("queue_position") or 0)
        dash = stack.dashboard_url
        seen: dict[str, list[Any]] = {"live": [], "paper": [], "compare": []}
        raised: dict[str, list[str]] = {}
        shots: set[str] = set()
        with browser_page(tmp_path / "profile", 1400, 1000) as first:
            ctx = first.context
            live = first
            live.goto(f"{dash}/?page=live&run={last['id']}")
            live.locator('[data-testid="stProgress"]').first.wait_for(timeout=60_000)
            paper = _open(
                ctx,
                f"{dash}/?page=paper&study=table2&dataset=fashion-mnist&seeds=1&rounds={ROUNDS}"
                f"&sweep={sweep_id}",
                '[data-testid="stProgress"]',
            )
            compare = _open(ctx, f"{dash}/?page=compare&sweep={sweep_id}", ".js-plotly-plot")
            tabs = {"live": live, "paper": paper, "compare": compare}
            # Execute: watch, never reload, until every run of the sweep has ended (6 runs on
            # 2 one-thread slots: 1-3 minutes alone, more beside other work on 2 cores)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                statuses = [
                    r["status"]
                    for r in api.get("/runs", params={"sweep_id": sweep_id}).json()["data"]
                ]
                done = sum(s in ("succeeded", "failed", "cancelled") for s in statuses)
                seen["live"].append(_progress(live))
                seen["paper"].append(_progress(paper))
                seen["compare"].append((compare.evaluate(CURVES), done))
                if seen["live"][-1].startswith(("queued", "running")):
                    _shot(live, f"live-{seen['live'][-1].split(' ')[0]}", shots)
                if 2 <= done <= 4:
                    _shot(paper, "paper-mid-sweep", shots)
                    _shot(compare, "compare-mid-sweep", shots)
                for name, tab in tabs.items():
                    raised.setdefault(name, []).extend(browse.exceptions(tab))
                if done == len(statuses) and "6/6" in seen["paper"][-1]:
                    break
                time.sleep(0.5)
            compare.wait_for_timeout(2500)  # the last refresh of the finished sweep
            seen["compare"].append((compare.evaluate(CURVES), len(runs)))
            # Execute: the failed run's Live page (it failed meanwhile: five hand-backs)
            failed = api.get(f"/runs/{bad_id}").json()
            live.goto(f"{dash}/?page=live&run={bad_id}")
            live.locator('[data-testid="stAlert"]').first.wait_for(timeout=60_000)
            live.locator(browse.IDLE).wait_for(timeout=30_000)
            failed_text = browse.main_text(live)
            _shot(live, "live-failed", shots)
            if os.environ.get("FEDGEN_SHOTS"):
                live.goto(f"{dash}/?page=runs")
                live.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=60_000)
                live.locator(browse.IDLE).wait_for(timeout=30_000)
                _shot(live, "runs-with-a-failed-run", shots)
            for name, tab in tabs.items():
                raised[name].extend(browse.exceptions(tab))
        api.close()
        tracebacks = browse.tracebacks(stack.home / "logs" / "dashboard.log")
    # Assert: Live showed the run queued, then running (rounds advancing), without reload
    states = [s.split(" ·")[0].split(" ")[0] for s in seen["live"] if s]
    assert states, seen["live"]
    assert states[0] == "queued", seen["live"]
    assert "running" in states[states.index("queued") :], seen["live"]
    # Paper: its progress advanced through the sweep to 6/6
    finished = [int(m.group(1)) for s in seen["paper"] if (m := re.match(r"(\d+)/6", s))]
    assert finished == sorted(finished), seen["paper"]
    assert len(set(finished)) >= 3, seen["paper"]
    assert finished[-1] == 6, seen["paper"]
    # Compare: curves grew while runs were still running, and reach the last round
    in_flight = [last_round for last_round, done in seen["compare"] if done < len(runs)]
    assert len({r for r in in_flight if r >= 0}) >= 2, seen["compare"]
    assert seen["compare"][-1][0] == ROUNDS, seen["compare"]
    # The failed run: its error and where it stopped, on Live
    assert failed["status"] == "failed", failed
    assert "failed before round 0: mnist: dataset files not found" in failed_text
    assert {k: v for k, v in raised.items() if v} == {}
    assert tracebacks == []
