"""A run's note editor (dashboard/annotate.py): when it was last edited reads as the rest of
the dashboard's times ('5 min ago (14:03)', the viewer's zone), never as raw ISO 8601."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from dashboard.annotate import edited_line
from tests.support.apptest import open_page
from tests.support.dashboard_lab import Lab, tiny_spec
from tests.support.factories import public_run

NOW = datetime(2026, 12, 3, 11, 18, 19, tzinfo=UTC)
RAW = "2026-12-03T11:13:19.3127147"  # as the finding saw it: 7 digits, no zone (UTC)


def test_edited_line_is_relative_with_the_local_time() -> None:
    """Five minutes before `now`: '5 min ago' and the clock time in the viewer's zone."""
    # Execute
    run = public_run(annotated_by="alice", annotated_at=RAW)
    utc = edited_line(run, NOW, UTC)
    berlin = edited_line(run, NOW, ZoneInfo("Europe/Berlin"))
    # Assert
    assert utc == "Last edited by alice · 5 min ago (11:13)"
    assert berlin == "Last edited by alice · 5 min ago (12:13)"


def test_edited_line_another_year_and_none() -> None:
    """An edit of another year names its date; a run nobody annotated has no line."""
    # Execute
    old = edited_line(public_run(annotated_by="bob", annotated_at="2025-11-30T14:03:00Z"), NOW, UTC)
    # Assert
    assert old is not None
    assert old.startswith("Last edited by bob · ")
    assert old.endswith("(2025-11-30 14:03)")
    assert edited_line(public_run(annotated_by=None, annotated_at=RAW), NOW, UTC) is None


def test_live_page_shows_a_readable_edit_time(
    app_path: str, lab_env: dict[str, Any], lab: Lab
) -> None:
    """An annotated run on the Live page: 'Last edited by alice · <relative> (HH:MM)'."""
    # Prepare
    with lab.client() as c:
        run = c.post("/runs", json={"spec": tiny_spec(seed=11)}).raise_for_status().json()
        c.patch(f"/runs/{run['id']}", json={"note": "time check"}).raise_for_status()
    try:
        # Execute
        at = open_page(app_path, "app_pages/live.py", {"live_run_id": run["id"]})
        captions = [str(x.value) for x in at.caption if "Last edited" in str(x.value)]
    finally:
        with lab.client() as c:
            c.delete(f"/runs/{run['id']}")  # the session's lab keeps its seeded run counts
    # Assert
    assert not at.exception
    assert len(captions) == 1, captions
    assert re.fullmatch(r"Last edited by alice · .+ \(\d\d:\d\d\)", captions[0]), captions
    assert "T" not in captions[0].split("·")[1]  # no ISO 'YYYY-MM-DDTHH:MM:SS'
