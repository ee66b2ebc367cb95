"""End to end in headless Chromium: submit a tiny run through the form, watch it on the Live page."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.support.browse import IDLE
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, ROOT, browser_page, lab_stack

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.usefixtures("chromium_present"),
]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def chromium_present() -> None:
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")


def _fill_number(page: object, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)  # type: ignore[attr-defined]
    box.fill(str(value))
    box.press("Enter")
    # Each Enter reruns the script: under load a click during that rerun can be lost.
    page.locator(IDLE).wait_for(timeout=60_000)  # type: ignore[attr-defined]


def _rounds_shown(page: object) -> int:
    """Rounds stored: the "last round" metric reads "r of R" once rounds 0..r are stored."""
    metric = page.locator('[data-testid="stMetric"]', has_text="last round")  # type: ignore[attr-defined]
    if metric.count() == 0:
        return 0
    text = metric.first.locator('[data-testid="stMetricValue"]').inner_text()
    last = re.match(r"\s*(\d+) of", text)
    return int(last[1]) + 1 if last else 0


@pytest.mark.timeout(240)
def test_submit_and_watch_live(tmp_path: Path) -> None:
    """A 3-round synthetic FedAvg run submitted in the form shows >= 2 rounds on the Live page."""
    ARTIFACTS.mkdir(exist_ok=True)
    with lab_stack(tmp_path / "home") as stack, browser_page(tmp_path / "profile") as page:
        # Prepare
        page.goto(f"{stack.dashboard_url}/submit")  # type: ignore[attr-defined]
        page.get_by_role("heading", name="Submit").wait_for(timeout=60_000)  # type: ignore[attr-defined]
        page.locator(IDLE).wait_for(timeout=60_000)  # type: ignore[attr-defined]
        # The heading can come before the form's first full draw (beside a training test):
        # wait for the box itself rather than a click's 30 s.
        dataset = page.get_by_role("combobox", name="Dataset")  # type: ignore[attr-defined]
        dataset.wait_for(timeout=90_000)
        dataset.click()
        page.get_by_role("option", name="synthetic", exact=True).click()  # type: ignore[attr-defined]
        page.locator(IDLE).wait_for(timeout=60_000)  # type: ignore[attr-defined]
        page.get_by_role("combobox", name="Algorithm").click()  # type: ignore[attr-defined]
        page.get_by_role("option", name="fedavg", exact=True).click()  # type: ignore[attr-defined]
        page.locator(IDLE).wait_for(timeout=60_000)  # type: ignore[attr-defined]
        _fill_number(page, "Users", 3)
        _fill_number(page, "Users per round", 2)
        _fill_number(page, "Rounds", 3)
        _fill_number(page, "Local steps T", 2)
        _fill_number(page, "Synthetic samples", 300)
        # Execute
        page.get_by_role("button", name="Submit run").click()  # type: ignore[attr-defined]
        page.get_by_text("Queued run").wait_for(timeout=60_000)  # type: ignore[attr-defined]
        page.get_by_text("Watch it on the Live run page").click()  # type: ignore[attr-defined]
        page.get_by_role("heading", name="Live run").wait_for(timeout=30_000)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 90
        while _rounds_shown(page) < 2 and time.monotonic() < deadline:
            page.wait_for_timeout(500)  # type: ignore[attr-defined]
        # The page re-renders once when the run ends (the timer stops): wait for its charts.
        page.locator(".js-plotly-plot").nth(1).wait_for(timeout=30_000)  # type: ignore[attr-defined]
        page.wait_for_timeout(1000)  # type: ignore[attr-defined]
        page.screenshot(path=str(ARTIFACTS / "e2e-live.png"), full_page=True)  # type: ignore[attr-defined]
        # Assert
        assert _rounds_shown(page) >= 2, (stack.home / "logs" / "worker.log").read_text()[-3000:]
        assert page.locator(".js-plotly-plot").count() >= 2  # type: ignore[attr-defined]
