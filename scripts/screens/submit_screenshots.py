"""Screenshots of the Submit page's refusals: a field out of range, a dataset no live worker has.

Run: `.venv/bin/python -m scripts.screens.submit_screenshots [OUT_DIR]` (under a minute, CPU
only, no network; default OUT_DIR /tmp/shots/submit). A real lab: API, one worker (which
finds Fashion-MNIST and the synthetic dataset, not MNIST) and the dashboard, in Chromium.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.stack import browser_page, lab_stack


def _wait_for_worker(api_url: str, token: str) -> list[str]:
    """The datasets of the first live worker, once it has registered."""
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        workers = httpx.get(f"{api_url}/api/v1/workers", headers=headers, timeout=10).json()
        if workers.get("workers"):
            return list(workers["workers"][0].get("datasets") or [])
        time.sleep(0.5)
    raise TimeoutError("no worker registered")


def main(out: Path = Path("/tmp/shots/submit")) -> int:
    """Start the lab, open Submit, shoot the refused states."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, lab_stack(Path(tmp) / "home") as stack:
        datasets = _wait_for_worker(stack.api_url, stack.token)
        sys.stdout.write(f"the worker loads: {datasets}\n")
        with browser_page(Path(tmp) / "profile", 1500, 2300) as page:
            p: object = page
            p.goto(f"{stack.dashboard_url}/submit")  # type: ignore[attr-defined]
            p.get_by_role("heading", name="Submit").wait_for(timeout=60_000)  # type: ignore[attr-defined]
            # 1. rounds = 0: refused under the field and by Validate
            box = p.get_by_label("Rounds", exact=True)  # type: ignore[attr-defined]
            box.fill("0")
            box.press("Enter")
            p.wait_for_timeout(800)  # type: ignore[attr-defined]
            p.get_by_role("button", name="Validate").click()  # type: ignore[attr-defined]
            p.get_by_text("Not validated").wait_for(timeout=30_000)  # type: ignore[attr-defined]
            p.wait_for_timeout(500)  # type: ignore[attr-defined]
            p.screenshot(path=str(out / "rounds-zero-refused.png"), full_page=True)  # type: ignore[attr-defined]
            box.fill("30")
            box.press("Enter")
            p.wait_for_timeout(800)  # type: ignore[attr-defined]
            # 2. the dataset picker open: mnist marked
            p.get_by_role("combobox", name="Dataset").click()  # type: ignore[attr-defined]
            p.get_by_role("listbox").wait_for(timeout=10_000)  # type: ignore[attr-defined]
            p.wait_for_timeout(300)  # type: ignore[attr-defined]
            p.screenshot(
                path=str(out / "dataset-picker.png"),
                clip={"x": 0, "y": 0, "width": 1500, "height": 700},
            )  # type: ignore[attr-defined]
            # 3. mnist chosen: refused with the picker's sentence
            p.get_by_role("option", name="mnist — no live worker has it", exact=True).click()  # type: ignore[attr-defined]
            p.wait_for_timeout(800)  # type: ignore[attr-defined]
            p.get_by_role("button", name="Submit run").click()  # type: ignore[attr-defined]
            p.get_by_text("Not submitted").wait_for(timeout=30_000)  # type: ignore[attr-defined]
            p.wait_for_timeout(500)  # type: ignore[attr-defined]
            p.screenshot(path=str(out / "dataset-refused.png"), full_page=True)  # type: ignore[attr-defined]
            # 4. the help of a field with a paper meaning
            p.get_by_role("combobox", name="Algorithm").click()  # type: ignore[attr-defined]
            p.get_by_role("option", name="fedgen", exact=True).click()  # type: ignore[attr-defined]
            p.wait_for_timeout(800)  # type: ignore[attr-defined]
            preset = p.locator('[data-testid="stSelectbox"]', has_text="Preset")  # type: ignore[attr-defined]
            preset.locator('[data-testid="stTooltipIcon"]').first.hover()
            p.wait_for_timeout(800)  # type: ignore[attr-defined]
            p.screenshot(
                path=str(out / "help-preset.png"),
                clip={"x": 0, "y": 0, "width": 1500, "height": 900},
            )  # type: ignore[attr-defined]
    sys.stdout.write(f"wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/shots/submit")))
