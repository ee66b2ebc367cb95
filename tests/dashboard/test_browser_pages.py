"""Headless Chromium on every page: /runs opens the Runs page (no "Page not found" dialog),
no Deploy button, no Streamlit exception box, no failed request, no console error and no 404
but Streamlit's own probes.

Opening a page's URL directly (`/runs`), Streamlit's frontend first asks whether the page
path is the app's base path (`/runs/_stcore/health`, `/runs/_stcore/host-config`); the
server answers 404 by design and the frontend goes on with `/`. Those two probes are the
only 404s allowed, and only on a directly opened page URL; moving through the app from
its root, or a link through the root (`/?page=compare&...`, as the demo prints), shows none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.needs import needs
from tests.support.stack import CHROMIUM, browser_page, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
# url path -> (title in the sidebar, the page's heading)
PAGES = {
    "runs": ("Runs", "Runs"),
    "submit": ("Submit", "Submit"),
    "live": ("Live run", "Live run"),
    "lab": ("Lab", "Lab"),
    "compare": ("Compare", "Compare"),
    "paper": ("Paper", "Paper"),
    "tables": ("Sweep tables", "Sweep tables"),
    "inspect": ("Inspect", "Inspect"),
    "trash": ("Trash", "Trash"),
    "settings": ("Settings", "Settings"),
}
PROBE = re.compile(r"/(\w+)/_stcore/(health|host-config)$")


class Watch:
    """404 answers, failed requests and console errors of a page, since the last `reset`."""

    def __init__(self, page: object) -> None:
        self.missing: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        page.on("response", lambda r: self.missing.append(r.url) if r.status == 404 else None)  # type: ignore[attr-defined]
        page.on("requestfailed", lambda r: self.failed.append(r.url))  # type: ignore[attr-defined]
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)  # type: ignore[attr-defined]

    def reset(self) -> None:
        self.missing, self.failed, self.errors = [], [], []


def _settle(page: object) -> None:
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=30_000)  # type: ignore[attr-defined]
    page.wait_for_timeout(1500)  # type: ignore[attr-defined]


def _exceptions(page: object) -> list[str]:
    """The text of each Streamlit exception box on the page (a traceback shown to the user)."""
    boxes = page.locator('[data-testid="stException"]')  # type: ignore[attr-defined]
    return [boxes.nth(i).inner_text()[:500] for i in range(boxes.count())]


@pytest.mark.timeout(300)
def test_every_page_loads_clean(tmp_path: Path) -> None:
    """/runs is the Runs page; every page by URL and by the sidebar loads without errors."""
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    with lab_stack(tmp_path / "home", worker=False) as stack:
        with browser_page(tmp_path / "profile") as page:
            watch = Watch(page)
            # Execute: from the root through the sidebar
            page.goto(stack.dashboard_url)  # type: ignore[attr-defined]
            _settle(page)
            root_url = page.url  # type: ignore[attr-defined]
            raised: dict[str, list[str]] = {}
            for path, (title, _) in PAGES.items():
                nav = page.locator('[data-testid="stSidebarNav"] a', has_text=title).first  # type: ignore[attr-defined]
                nav.click()
                _settle(page)
                raised[f"nav:{path}"] = _exceptions(page)
            by_nav = (watch.missing, watch.failed, watch.errors)
            # Execute: a shared link through the root (the demo prints one)
            page.goto(f"{stack.dashboard_url}/?page=compare&x=wall-clock")  # type: ignore[attr-defined]
            _settle(page)
            via_root = (page.url, watch.missing, watch.failed)  # type: ignore[attr-defined]
            # Execute: each page's own URL
            direct: dict[str, tuple[bool, int, str]] = {}
            watch.reset()
            for path in PAGES:
                page.goto(f"{stack.dashboard_url}/{path}")  # type: ignore[attr-defined]
                _settle(page)
                not_found = page.get_by_text("Page not found").count() > 0  # type: ignore[attr-defined]
                deploy = page.locator('[data-testid="stAppDeployButton"]').count()  # type: ignore[attr-defined]
                heading = page.locator('[data-testid="stMain"] h1').first.inner_text()  # type: ignore[attr-defined]
                direct[path] = (not_found, deploy, heading.strip())
                raised[path] = _exceptions(page)
    # Assert
    assert root_url.rstrip("/").endswith("/runs")  # the root forwards to the Runs page's URL
    assert by_nav == ([], [], [])
    assert re.search(r"/compare\?(.*&)?x=wall-clock", via_root[0]), via_root[0]
    assert "page=" not in via_root[0]
    assert via_root[1:] == ([], [])
    assert direct["runs"] == (False, 0, "Runs")
    assert direct == {p: (False, 0, heading) for p, (_, heading) in PAGES.items()}
    assert {p: e for p, e in raised.items() if e} == {}
    assert watch.failed == []
    probes = [m for m in watch.missing if PROBE.search(m)]
    assert probes == watch.missing, watch.missing
    assert {PROBE.search(m).group(1) for m in probes} <= set(PAGES)  # type: ignore[union-attr]
    assert all("404" in e for e in watch.errors), watch.errors
