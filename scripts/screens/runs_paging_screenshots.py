"""Screenshots of the Runs page paging through a lab with more runs than a page: the lab's
counts above the table, page 1 and the page with the oldest runs (queued, running, failed and
succeeded ones among them).

Run: `.venv/bin/python -m scripts.screens.runs_paging_screenshots [OUT_DIR]` (about a minute,
no network; default OUT_DIR /tmp/screens-paging). One lab (API + dashboard, no worker): the
runs of issue 28's screenshots in every state, then a sweep of 30 queued runs on top.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from scripts.screens.issue28_screenshots import _arrange
from tests.support import browse
from tests.support.dashboard_lab import tiny_spec
from tests.support.stack import Stack, browser_page, lab_stack

QUEUED_ON_TOP = 30


def _crowd(stack: Stack) -> None:
    """A sweep of QUEUED_ON_TOP queued runs, newer than every other run."""
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
        grid = {"seed": list(range(100, 100 + QUEUED_ON_TOP))}
        body = {"name": "crowd", "base": tiny_spec(), "grid": grid}
        c.post("/sweeps", json=body).raise_for_status()


def main(out: Path = Path("/tmp/screens-paging")) -> int:
    """Start the lab, arrange the runs, screenshot page 1 and the last page at 25 a page."""
    with tempfile.TemporaryDirectory() as tmp, lab_stack(Path(tmp) / "home", worker=False) as stack:
        _arrange(stack)
        _crowd(stack)
        with browser_page(Path(tmp) / "profile", 1600, 1500) as opened:
            page: Any = opened
            browse.visit(page, stack.dashboard_url, "runs", browse.TABLE)
            page.get_by_label("Per page").click()
            page.get_by_role("option", name="25", exact=True).click()
            browse.settle(page, browse.TABLE)
            browse.shot(page, out, "runs-page-1")
            page.get_by_role("button", name="Older").click()
            page.get_by_text("runs 26–").wait_for(timeout=30_000)
            browse.settle(page, browse.TABLE)
            browse.shot(page, out, "runs-page-2-oldest")
            raised = browse.exceptions(page)
        problems = browse.tracebacks(stack.home / "logs" / "dashboard.log")
    sys.stdout.write(f"wrote {out}; exception boxes: {raised}; tracebacks: {problems}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/screens-paging")))
