"""One number per fact, in headless Chromium: a run's best and final accuracy, its durations,
its name, an algorithm's name, the Lab's worker count and queue, and Table 3's noisy timing
read the same on every page that shows them.

One real lab (API + dashboard, no worker process; FEDGEN_QUEUE_PREFIX=nc5) with runs queued,
running (its worker gone after round 3), failed (in round 3), finished (a sweep of FedAvg,
FedDF and SCAFFOLD, two seeds each, posted to POST /sweeps) and deleted, run by the worker's
own `execute_run` with a fake runner that reports the run's real protocol (the official
profile: eval_timing before_training, so round R is stored and never counted) and noisy
round times (7 and 13 ms per user, alternating). A `fedgen-lab worker --slots 2` is two slot
rows of the `workers` table. The walk:

- item 1: the API's `best_acc`/`last_acc` are `summary.best_acc`/`summary.final_acc` (round R,
  the highest stored, is not counted); Live and Runs show that same best;
- item 2: Live names its durations "running time" and "training time" (no "wall-clock"), so
  does Compare's time axis, Runs has a "running time" column, the API gives `running_s` and
  `total_s`;
- item 3: the Runs table, Compare's chips and Trash name a run "FedAvg · Synth · … s1", never
  "algorithm=fedavg, …" or "fedavg · synthetic"; Sweep tables head FedDF's column "FedDF" and
  SCAFFOLD's "SCAFFOLD"; the paper's own label appears only as "FedDF (paper: FedDFusion)";
- item 4: Lab says "1 worker · 2 slots", its queue column says "cpu" (not "nc5cpu"); Table 3
  flags the noisy timing with each row's CV.

Every page is saved as a PNG in FEDGEN_SCREENSHOTS (default: the test's tmp folder).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import browse
from tests.support.browse import ALERT, TABLE
from tests.support.dashboard_lab import tiny_spec
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, Stack, browser_page, execute_here, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROUNDS = 6
CHART = ".js-plotly-plot"
H1 = '[data-testid="stMain"] h1'


SLOT0 = "cpu-slot0@labhost"  # slot 0 of the `--slots 2` worker the Lab page counts


def _official_runner(fail_at: int | None = None, die_after: int | None = None) -> Any:
    """The shared fake runner under the spec's real protocol (its fidelity's eval_timing, the
    summary from fedgen.stats) with round times that vary by ±30 % from round to round."""
    from fedgen.events import RunSummary, SummaryStatus
    from fedgen.fidelity import resolve
    from fedgen.spec import ExperimentSpec
    from fedgen.stats import summarize_curve
    from tests.support.fakes import FakeRunner, Killed, fake_acc

    class OfficialRunner(FakeRunner):
        def __call__(
            self,
            spec: ExperimentSpec,
            sink: Any,
            resume_from: bytes | None = None,
            should_stop: Any = None,
        ) -> RunSummary:
            timing = resolve(spec).eval_timing
            info = self._info(spec, 0)
            sink.on_start(type(info)(**{**info.to_dict(), "fidelity": {"eval_timing": timing}}))
            accs: list[float] = []
            for r in range(spec.rounds + 1):
                if r == fail_at:
                    raise RuntimeError(f"simulated failure in round {r}")
                accs.append(fake_acc(spec.seed, r, spec.algorithm.name))
                event = self._round(spec, r, accs[-1])
                ms = 7.0 if r % 2 else 13.0
                event.metrics.update(time_user_ms=ms, time_total_ms=10 * ms)
                sink.on_round(event)
                if r == die_after:
                    raise Killed(r)
            c = summarize_curve(accs, timing, spec.rounds)
            summary = RunSummary(
                SummaryStatus.COMPLETED,
                spec.rounds,
                c.final,
                c.best,
                c.top5_mean,
                c.top5_std,
                "top5",
                c.top5_mean,
                1.5,
                c.final_round,
                c.best_round,
            )
            sink.on_finish(summary)
            return summary

    return OfficialRunner()


def _two_slots(stack: Stack) -> None:
    """One `fedgen-lab worker --slots 2` on host labhost: two slot rows, heartbeat now."""
    from lab.db import make_engine, make_sessionmaker
    from lab.repository import workers as workers_repo

    engine = make_engine(f"sqlite:///{stack.home / 'lab.db'}")
    try:
        with make_sessionmaker(engine)() as s:
            for i in (0, 1):
                workers_repo.register(s, f"cpu-slot{i}@labhost", ["nc5cpu"], 1, host="labhost")
            s.commit()
    finally:
        engine.dispose()


def _arrange(stack: Stack) -> dict[str, Any]:
    """The runs in their states; the API's answers about them."""
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
        body = {
            "name": "numbers",
            "base": tiny_spec(rounds=ROUNDS),
            "grid": {"algorithm": ["fedavg", "feddf", "scaffold"], "seed": [1, 2]},
        }
        sweep = c.post("/sweeps", json=body).raise_for_status().json()
        for rid in sweep["run_ids"]:
            assert execute_here(stack, rid, _official_runner(), SLOT0) == "succeeded"

        def submit(**changes: Any) -> str:
            spec = tiny_spec(rounds=ROUNDS, **changes)
            return str(c.post("/runs", json={"spec": spec}).raise_for_status().json()["id"])

        ids = {"running": submit(seed=3), "failed": submit(seed=4), "queued": submit(seed=5)}
        assert execute_here(stack, ids["running"], _official_runner(die_after=3), SLOT0) == "died"
        assert execute_here(stack, ids["failed"], _official_runner(fail_at=3), SLOT0) == "failed"
        ids["deleted"] = submit(seed=6)
        c.delete(f"/runs/{ids['deleted']}").raise_for_status()
        runs = {r["id"]: r for r in c.get(f"/runs?sweep_id={sweep['id']}").json()["data"]}
        for k in ("running", "failed", "queued"):
            runs[ids[k]] = c.get(f"/runs/{ids[k]}").raise_for_status().json()
    return {"sweep": sweep["id"], "ids": ids, "runs": runs}


@pytest.mark.timeout(300)
def test_one_number_per_fact(tmp_path: Path) -> None:
    """Items 1-4: every page shows the same best, durations by name, one run and algorithm
    name, the Lab's workers and queue as they are, and noisy Table 3 timing flagged."""
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    shots = Path(os.environ.get("FEDGEN_SCREENSHOTS") or tmp_path / "shots")
    from tests.support.fakes import fake_acc

    with lab_stack(
        tmp_path / "home", worker=False, env_extra={"FEDGEN_QUEUE_PREFIX": "nc5"}
    ) as stack:
        made = _arrange(stack)
        ids, runs, sweep = made["ids"], made["runs"], made["sweep"]
        fedavg1 = next(
            r
            for r in runs.values()
            if r["spec"]["algorithm"]["name"] == "fedavg"
            and r["spec"]["seed"] == 1
            and r["status"] == "succeeded"
        )
        texts: dict[str, str] = {}
        grids: dict[str, tuple[list[str], list[list[str]]]] = {}
        raised: dict[str, list[str]] = {}
        with browser_page(tmp_path / "profile", 2400, 1400) as opened:
            page: Any = opened

            def visit(name: str, query: str, ready: str, grid: bool = False) -> None:
                browse.visit(page, stack.dashboard_url, query, ready)
                texts[name] = browse.main_text(page)
                raised[name] = browse.exceptions(page)
                if grid:
                    grids[name] = browse.grid(page.locator(TABLE).first)
                browse.shot(page, shots, name.replace(":", "-"))

            visit("runs", "runs", TABLE, grid=True)
            visit("live:succeeded", f"live&run={fedavg1['id']}", CHART)
            for state in ("running", "failed", "queued"):
                visit(f"live:{state}", f"live&run={ids[state]}", f"{CHART}, {ALERT}")
            chosen = ",".join([fedavg1["id"], ids["running"], ids["failed"], ids["queued"]])
            visit("compare", f"compare&runs={chosen}", CHART)
            visit("tables", f"tables&sweep={sweep}", TABLE)
            visit("paper", "paper&study=table1", H1)
            visit("trash", "trash", TABLE, grid=True)
            _two_slots(stack)
            visit("lab", "lab", TABLE, grid=True)
        tracebacks = browse.tracebacks(stack.home / "logs" / "dashboard.log")
    assert {k: v for k, v in raised.items() if v} == {}
    assert tracebacks == []

    # Item 1: one best and one final per run, the protocol's (round R is never counted).
    summary = fedavg1["summary"]
    assert summary["best_round"] == ROUNDS - 1
    assert fedavg1["best_acc"] == summary["best_acc"] == fake_acc(1, ROUNDS - 1)
    assert fedavg1["last_acc"] == summary["final_acc"]
    assert fedavg1["best_acc"] != fake_acc(1, ROUNDS)  # the highest stored round is R's
    for r in runs.values():
        if r["summary"]:
            assert (r["best_acc"], r["last_acc"]) == (
                r["summary"]["best_acc"],
                r["summary"]["final_acc"],
            )
    best_pct = f"{summary['best_acc'] * 100:.2f}"
    assert f"{best_pct}%" in browse.flat(texts["live:succeeded"])
    heads, rows = grids["runs"]
    assert "best acc (%)" in heads
    shown_best = {row[heads.index("best acc (%)")] for row in rows}
    assert any(cell.startswith(best_pct) for cell in shown_best), shown_best
    assert not any(cell.startswith(f"{fake_acc(1, ROUNDS) * 100:.2f}") for cell in shown_best)

    # Item 2: each duration by its one name; the API's seconds by the same definitions.
    for state in ("succeeded", "running", "failed"):
        text = texts[f"live:{state}"]
        assert "running time" in text, state
        assert "wall-clock" not in text, state
    assert "training time" in texts["live:succeeded"]
    assert "training time" in texts["compare"]  # its time axis
    assert "wall-clock" not in texts["compare"]
    assert "running time" in heads
    assert "duration" not in heads
    assert fedavg1["running_s"] is not None
    assert fedavg1["total_s"] >= fedavg1["running_s"] >= 0

    # Item 3: one name per run and per algorithm on every page.
    names = [row[heads.index("run")] for row in rows]
    assert all(n.startswith(("FedAvg · Synth", "FedDF · Synth", "SCAFFOLD · Synth")) for n in names)
    compare = browse.flat(texts["compare"])
    assert "FedAvg · Synth · s1" in compare
    assert "algorithm=fedavg" not in compare
    assert "seed=1" not in compare
    t_heads, t_rows = grids["trash"]
    assert t_rows[0][t_heads.index("run")] == "FedAvg · Synth"
    tables = browse.flat(texts["tables"])
    assert "FedDFusion" not in tables.replace("FedDF (paper: FedDFusion)", "")
    assert "SCAFFOLD" in tables
    assert "FedDF" in tables
    paper = browse.flat(texts["paper"])
    assert "FedDFusion" not in paper.replace("the paper's FedDFusion", "")

    # Item 4: one worker with two slots, its queue by what it takes; noisy timing flagged.
    lab = browse.flat(texts["lab"])
    assert "1 worker · 2 slots on 1 host" in lab
    assert "2 workers" not in lab
    l_heads, l_rows = grids["lab"]
    assert {row[l_heads.index("queues")] for row in l_rows} == {"cpu"}
    assert "nc5cpu" not in lab
    assert "Noisy timing" in tables
    assert re.search(r"FedAvg[^,]* \(CV 3[0-9]%\)", tables), tables  # 7 and 13 ms: 30 %
