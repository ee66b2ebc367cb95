"""In headless Chromium: edit a run's note on the Runs page, see it on Live, delete a run after
confirming (issue 20, "Notes and tags"). No worker: the runs stay queued, which is all it needs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.browse import tick_row
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, ROOT, browser_page, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ARTIFACTS = ROOT / "test-artifacts"
SPEC: dict[str, Any] = {
    "data": {"name": "synthetic", "synthetic_samples": 400},
    "partition": {"num_users": 3},
    "users_per_round": 2,
    "rounds": 2,
    "local_steps": 2,
}
TABLE = '[data-testid="stDataFrame"]'


@pytest.mark.timeout(120)
def test_edit_note_on_runs_see_it_on_live_delete_after_confirming(tmp_path: Path) -> None:
    """The note saved on Runs is the run's (by whom) and shows on Live; Delete asks, then deletes."""
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    ARTIFACTS.mkdir(exist_ok=True)
    with lab_stack(tmp_path / "home", worker=False) as stack:
        headers = {"Authorization": f"Bearer {stack.token}"}
        with httpx.Client(base_url=f"{stack.api_url}/api/v1", headers=headers, timeout=30) as c:
            # Prepare: newest first, so `keep` is row 1 and `victim` row 0
            keep = c.post("/runs", json={"spec": {**SPEC, "note": "first"}}).json()["id"]
            victim = c.post("/runs", json={"spec": {**SPEC, "seed": 1}}).json()["id"]
            with browser_page(tmp_path / "profile", 1500, 1100) as page:
                page.goto(f"{stack.dashboard_url}/runs")  # type: ignore[attr-defined]
                table = page.locator(TABLE).first  # type: ignore[attr-defined]
                table.wait_for(timeout=60_000)
                # Execute: the note, edited in the picked run's panel
                tick_row(page, table, 1)
                note = page.locator('textarea[aria-label^="Note"]')  # type: ignore[attr-defined]
                note.wait_for(timeout=30_000)
                note.fill("diverged at round 1, see lr")
                page.get_by_role("button", name="Save note and tags").click()  # type: ignore[attr-defined]
                page.get_by_text("Note and tags saved").wait_for(timeout=30_000)  # type: ignore[attr-defined]
                saved = c.get(f"/runs/{keep}").json()
                # ... seen on Live
                page.goto(f"{stack.dashboard_url}/live?run={keep}")  # type: ignore[attr-defined]
                page.get_by_text("diverged at round 1, see lr").first.wait_for(timeout=30_000)  # type: ignore[attr-defined]
                page.screenshot(path=str(ARTIFACTS / "annotate-live.png"))  # type: ignore[attr-defined]
                # ... and a run deleted after confirming
                page.goto(f"{stack.dashboard_url}/runs")  # type: ignore[attr-defined]
                table = page.locator(TABLE).first  # type: ignore[attr-defined]
                table.wait_for(timeout=60_000)
                tick_row(page, table, 0)
                page.get_by_role("button", name="Delete 1…").click()  # type: ignore[attr-defined]
                confirm = page.get_by_role("button", name="Yes, delete")  # type: ignore[attr-defined]
                confirm.wait_for(timeout=30_000)
                still_there = c.get(f"/runs/{victim}").status_code  # asked, not yet deleted
                confirm.click()
                page.get_by_text("Moved 1 run to Trash").wait_for(timeout=30_000)  # type: ignore[attr-defined]
                gone = c.get(f"/runs/{victim}").status_code
                kept = c.get(f"/runs/{keep}").status_code
    # Assert
    assert (saved["note"], saved["annotated_by"]) == ("diverged at round 1, see lr", "e2e")
    assert saved["spec"]["note"] == "first"
    assert still_there == 200
    assert (gone, kept) == (404, 200)
