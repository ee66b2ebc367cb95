"""Screenshots of the Sweep tables page's Plot section, in headless Chromium.

Run: `.venv/bin/python -m scripts.screens.sweep_plot_screenshots [OUT_DIR]` (default /tmp/shots;
about a minute, no network). Three study sweeps are launched through the API and their runs
finished through the real write path (`tests.support.factories.seed_rounds`: rounds, then the status)
with fabricated curves, each run's summary computed from its curve as the runner does:

- Table 1 on MNIST (7 algorithms x α = 0.05, 0.1, 1 x 3 seeds): curves level off near the
  paper's Table 1 cell, a seed's offset drawn from the cell's std; two runs left queued and one
  failed, so the plot shows partial points ("2/3") and the caption what is not counted.
- Table 3 on EMNIST (FedAvg, FedGen B_G = 8 ... 128 x 3 seeds): FedAvg has no B_G, so it is
  a level line across FedGen's.
- Table 1 on EMNIST: α and T both vary with the algorithm, so the parallel-coordinates view.

The numbers are made up to look like the paper's: they show how the page reads, not results.
"""

from __future__ import annotations

import math
import random
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.orm import Session

from fedgen import paper
from fedgen.fidelity import resolve
from fedgen.spec import ExperimentSpec
from fedgen.stats import summarize_curve
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from lab.models import Run
from tests.support.factories import seed_rounds
from tests.support.stack import browser_page, lab_stack

OUT = Path("/tmp/shots")
ROUNDS = 20
SEEDS = 3
# Where Table 1 has no cell: a plausible (mean, std) in %; B_G shifts FedGen a little.
EMNIST_BG = {"fedavg": (68.6, 1.4), "fedgen": (72.1, 0.9)}


def plateau(spec: dict[str, Any]) -> tuple[float, float]:
    """The paper's (mean, std) in % for this run's algorithm and setting, or a plausible one."""
    alg = spec["algorithm"]["name"]
    alpha = spec["partition"]["alpha"]
    dataset = "MNIST" if spec["data"]["name"] == "mnist" else "EMNIST"
    mean, std = EMNIST_BG.get(alg, (70.0, 1.0))
    for key, cells in paper.TABLE1.items():
        if (key.dataset, key.setting, key.local_steps) == (
            dataset,
            f"α={alpha:g}",
            spec["local_steps"],
        ) and alg in cells:
            mean, std = cells[alg]
    bg = spec["algorithm"].get("gen_batch_size")
    if bg:  # made up: a bigger synthetic batch helps a little, with diminishing returns
        mean += 0.5 * math.log2(bg / 32)
    return mean, std


def curve(spec: dict[str, Any]) -> list[float]:
    """Rounds 0..R: a rise to the plateau, the seed's offset, a little round-to-round noise."""
    mean, std = plateau(spec)
    rng = random.Random(f"{spec['algorithm']}-{spec['partition']['alpha']}-{spec['seed']}")
    top = (mean + rng.gauss(0.0, std)) / 100
    return [
        round(min(0.999, 0.1 + (top - 0.1) * (1 - 0.72**r) + rng.gauss(0, 0.002) * (r > 0)), 5)
        for r in range(ROUNDS + 1)
    ]


def finish(session: Session, run_id: str, status: str = "succeeded") -> None:
    """The run's rounds through the write path, then the summary the runner would write."""
    run = session.get(Run, uuid.UUID(run_id))
    assert run is not None
    accs = curve(run.spec)
    seed_rounds(session, run, accs, status=status)
    spec = ExperimentSpec.model_validate(run.spec)
    s = summarize_curve(accs, resolve(spec).eval_timing, spec.rounds)
    summary = {
        "final_acc": s.final,
        "final_round": s.final_round,
        "best_acc": s.best,
        "best_round": s.best_round,
        "top5_mean": s.top5_mean,
        "top5_std": s.top5_std,
    }
    session.query(Run).filter(Run.id == run.id).update({"summary": summary})
    session.commit()


def launch(c: httpx.Client, study: str, dataset: str) -> dict[str, Any]:
    """POST /studies/{name}: the study's sweep."""
    body = {"dataset": dataset, "seeds": SEEDS, "rounds": ROUNDS}
    return dict(c.post(f"/studies/{study}", json=body).raise_for_status().json()["sweep"])


def shoot(page: Any, url: str, path: Path, parcoords: bool = False) -> None:
    """Open the page, wait for the plot, and save the Plot section (pickers to caption)."""
    page.goto(url)
    chart = page.locator(".st-key-tables_parcoords" if parcoords else ".st-key-tables_plot")
    chart.locator(".main-svg").first.wait_for(timeout=90_000)
    page.wait_for_timeout(2500)  # plotly's transitions and the fonts
    top = page.get_by_role("heading", name="Plot", exact=True).bounding_box()
    end = chart.bounding_box()
    start = top["y"] - 10 if not parcoords else end["y"] - 50
    height = end["y"] + end["height"] - start + (110 if not parcoords else 20)
    page.screenshot(path=str(path), clip={"x": 0, "y": start, "width": 1500, "height": height})
    sys.stdout.write(f"wrote {path}\n")


def main(out_dir: Path = OUT) -> int:
    """Start API + dashboard, fill three study sweeps, screenshot their plots."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, lab_stack(Path(tmp) / "home", worker=False) as stack:
        engine = make_engine(Settings(home=stack.home).database_url)
        factory = make_sessionmaker(engine)
        headers = {"Authorization": f"Bearer {stack.token}"}
        with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=60) as c:
            t1 = launch(c, "table1", "mnist")
            t3 = launch(c, "table3", "emnist-letters")
            t1e = launch(c, "table1", "emnist-letters")
        with factory() as s:
            ids = t1["run_ids"]
            # Two runs still queued and one failed: partial points and the "not counted" line.
            for i, run_id in enumerate(ids):
                if i in (len(ids) - 1, len(ids) - 4):
                    continue
                finish(s, run_id, "failed" if i == 5 else "succeeded")
            for run_id in t3["run_ids"] + t1e["run_ids"]:
                finish(s, run_id)
        engine.dispose()
        tables = f"{stack.dashboard_url}/tables"
        with browser_page(Path(tmp) / "profile", 1500, 3200) as page:
            shoot(
                page,
                f"{tables}?sweep={t1['id']}&x=partition.alpha",
                out_dir / "plot-table1-alpha.png",
            )
            shoot(
                page,
                f"{tables}?sweep={t3['id']}&x=algorithm.gen_batch_size&interval=ci95",
                out_dir / "plot-table3-bg.png",
            )
            shoot(
                page,
                f"{tables}?sweep={t1e['id']}&x=partition.alpha",
                out_dir / "plot-table1-emnist-parcoords.png",
                parcoords=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
