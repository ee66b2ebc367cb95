"""Helpers for walking the dashboard in headless Chromium (Playwright pages typed as Any).

What a page shows once it has settled, its exception boxes, the cells of a data frame (its
accessible grid: the canvas draws them, the grid holds their text), and screenshots into a
folder. Used by the newcomer's walk-through (test_browser_newcomer.py) and the issue-28
screenshots script (issue28_screenshots.py).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
TABLE, CHART = '[data-testid="stDataFrame"]', ".js-plotly-plot"
ALERT = '[data-testid="stAlert"]'


def settle(page: Any, ready: str, timeout_ms: int = 60_000) -> None:
    """Wait for the page's title and its `ready` element, then for its script run to end."""
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=timeout_ms)
    page.locator(ready).first.wait_for(timeout=timeout_ms)
    page.locator(IDLE).wait_for(timeout=timeout_ms)
    page.wait_for_timeout(300)  # a fragment's rerun that was just due
    page.locator(IDLE).wait_for(timeout=timeout_ms)


def visit(page: Any, base: str, query: str, ready: str) -> None:
    """Open `base/?page=...` and wait until it has settled."""
    page.goto(f"{base}/?page={query}")
    settle(page, ready)


def exceptions(page: Any) -> list[str]:
    """The text of each Streamlit exception box on the page."""
    boxes = page.locator('[data-testid="stException"]')
    return [str(boxes.nth(i).inner_text())[:400] for i in range(boxes.count())]


def main_text(page: Any) -> str:
    """Everything the main area says (widgets' labels, alerts, code blocks)."""
    return str(page.locator('[data-testid="stMain"]').inner_text())


def flat(text: str) -> str:
    """`text` with every run of white space as one blank (Markdown wraps long lines)."""
    return " ".join(text.split())


def grid(frame: Any, timeout_ms: int = 30_000) -> tuple[list[str], list[list[str]]]:
    """(column headers, rows of cell texts) of a data frame (the locator of its
    stDataFrame element), as its accessible grid holds them: the rows and columns drawn, i.e.
    the visible ones. The grid is hidden from sight, so its text is read, not its inner text.

    The grid is filled after the frame appears, and a page's live fragment may redraw the frame
    while it is read, so an empty read is tried again for up to `timeout_ms`."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        headers, rows = _grid_once(frame)
        if headers or time.monotonic() >= deadline:
            return headers, rows
        frame.page.wait_for_timeout(250)


def _grid_once(frame: Any) -> tuple[list[str], list[list[str]]]:
    heads = frame.locator('[role="columnheader"]')
    headers = [str(heads.nth(i).text_content() or "").strip() for i in range(heads.count())]
    rows = []
    body = frame.locator('[role="row"]')
    for i in range(body.count()):
        cells = body.nth(i).locator('[role="gridcell"]')
        if cells.count():
            rows.append(
                [str(cells.nth(j).text_content() or "").strip() for j in range(cells.count())]
            )
    return headers, rows


def tracebacks(log: Path) -> list[str]:
    """Each traceback the dashboard's server wrote to its log (an uncaught page exception)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    pattern = r"Traceback \(most recent call last\)[^\n]*\n(?:\s.*\n?)*(?:\S.*)?"
    return [m.group(0)[:800] for m in re.finditer(pattern, text)]


def shot(page: Any, folder: Path, name: str) -> Path:
    """Save the whole page as `folder/name.png` (charts given a moment to draw)."""
    folder.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(1500)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def tick_row(page: Any, table: Any, row: int) -> None:
    """Tick row `row` (0 = first) of a Streamlit dataframe: its row-marker checkbox is drawn on
    the canvas at the row's left end, below the header row (35 px rows)."""
    box = table.bounding_box()
    table.hover()
    page.mouse.click(box["x"] + 18, box["y"] + 35 * (row + 1) + 17)
    page.wait_for_timeout(800)
