"""A plugin algorithm on the Compare page, in headless Chromium: examples/plugins/lrdecay,
pip-installed into a folder on every lab process's path, runs beside FedAvg in one sweep and
both curves are drawn, each in its declared colour (FedAvg-decay's from its own declaration)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browse import IDLE
from tests.support.needs import needs
from tests.support.plugin_site import install_example, pythonpath
from tests.support.stack import CHROMIUM, browser_page, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
BASE: dict[str, Any] = {
    "data": {"name": "synthetic", "synthetic_samples": 400, "synthetic_classes": 4},
    "partition": {"num_users": 3, "alpha": 1.0},
    "users_per_round": 2,
    "rounds": 3,
    "local_steps": 2,
    "batch_size": 16,
    "checkpoint_every": 0,
}
TRACES = """() => {
  const plot = document.querySelectorAll('.js-plotly-plot')[0];
  if (!plot || !plot.data) return [];
  return plot.data.map((t) => [String(t.name), String((t.line || {}).color)]);
}"""  # every curve of the first chart: (legend name, line colour)


@pytest.mark.timeout(180)
def test_plugin_curve_beside_fedavg_on_compare(tmp_path: Path) -> None:
    # Prepare
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    site = install_example(tmp_path / "lrdecay")
    env = {"PYTHONPATH": pythonpath(site), "FEDGEN_REAPER_S": "1"}
    with lab_stack(tmp_path / "home", env_extra=env) as stack:
        headers = {"Authorization": f"Bearer {stack.token}"}
        with httpx.Client(base_url=f"{stack.api_url}/api/v1", headers=headers, timeout=30) as api:
            grid = {"algorithm": ["fedavg", {"name": "fedavg-decay", "server_lr_decay": 0.5}]}
            made = api.post("/sweeps", json={"name": "lr-decay", "base": BASE, "grid": grid})
            sweep_id = made.raise_for_status().json()["id"]
            end = time.monotonic() + 120
            while time.monotonic() < end:
                runs = api.get("/runs", params={"sweep_id": sweep_id}).json()["data"]
                if all(r["status"] in ("succeeded", "failed") for r in runs):
                    break
                time.sleep(0.5)
        # Execute
        with browser_page(tmp_path / "profile") as page:
            page.goto(f"{stack.dashboard_url}/?page=compare&sweep={sweep_id}")  # type: ignore[attr-defined]
            page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)  # type: ignore[attr-defined]
            page.locator(IDLE).wait_for(timeout=30_000)  # type: ignore[attr-defined]
            traces = page.evaluate(TRACES)  # type: ignore[attr-defined]
    # Assert
    assert sorted(r["status"] for r in runs) == ["succeeded", "succeeded"], runs
    colours = dict(traces)
    plugin = [n for n in colours if "fedavg-decay" in n]
    fedavg = [n for n in colours if "fedavg" in n and "fedavg-decay" not in n]
    assert plugin, traces
    assert fedavg, traces
    assert {colours[n] for n in plugin} == {"#C5B0D5"}  # its declaration's colour
    assert {colours[n] for n in fedavg} == {"#1F77B4"}
