"""The Runs page pages through the whole lab: the server's counts, and Older/Newer back to the
oldest run (AppTest on a lab of its own with more runs than a page)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st

from tests.support.apptest import open_page, texts
from tests.support.dashboard_lab import Lab, start_lab, tiny_spec
from tests.support.fakes import FakeRunner
from worker.claimed_run import execute_run

PER_PAGE = 25
QUEUED = PER_PAGE + 1  # one more than a page, with the oldest run: two pages


@pytest.fixture
def crowded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A lab whose oldest run succeeded, then a sweep of QUEUED queued runs."""
    lab: Lab = start_lab(tmp_path)
    try:
        with lab.client() as c:
            oldest = c.post("/runs", json={"spec": tiny_spec(seed=0)}).raise_for_status().json()
            done = execute_run(
                oldest["id"],
                lab.app.state.sessionmaker,
                runner=FakeRunner(),
                settings=lab.settings,
                worker_name="test-worker",
            )
            assert done == "succeeded"
            grid = {"seed": list(range(1, QUEUED + 1))}
            body = {"name": "many", "base": tiny_spec(), "grid": grid}
            c.post("/sweeps", json=body).raise_for_status()
        monkeypatch.setenv("FEDGEN_API_URL", lab.url)
        monkeypatch.setenv("FEDGEN_TOKEN", lab.token)
        st.cache_data.clear()
        yield {"oldest": oldest["id"]}
    finally:
        lab.stop()


def _ids(at: Any) -> list[str]:
    return list(at.dataframe[0].value["id"])


def test_runs_page_counts_the_lab_and_pages_to_the_oldest_run(crowded: dict[str, Any]) -> None:
    """Page 1 holds the newest 25 and says the lab's counts (not those of the page); Older
    reaches the oldest run with the same counts, Newer goes back; page 2 has no Older."""
    app = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
    # Execute
    at = open_page(app, "app_pages/runs.py", {"runs_per_page": PER_PAGE})
    first = _ids(at)
    at.button(key="runs_older").click().run()
    second = _ids(at)
    second_text = texts(at)
    older_disabled = at.button(key="runs_older").disabled
    at.button(key="runs_newer").click().run()
    # Assert
    assert not at.exception
    counts = f"{QUEUED} queued · 1 succeeded"
    assert counts in second_text
    assert len(first) == PER_PAGE
    assert f"runs 1–{PER_PAGE} of {QUEUED + 1}, newest first" in texts(at)
    assert crowded["oldest"][:8] not in first
    assert len(second) == QUEUED + 1 - PER_PAGE
    assert second[-1] == crowded["oldest"][:8]
    assert not set(first) & set(second)
    assert f"runs {PER_PAGE + 1}–{QUEUED + 1} of {QUEUED + 1}, newest first" in second_text
    assert older_disabled
    assert _ids(at) == first
    assert counts in texts(at)


def test_a_status_filter_keeps_the_labs_counts(crowded: dict[str, Any]) -> None:
    """Filtered to succeeded, the table holds the one succeeded run and the counts line still
    counts every status (the server's, under the other filters)."""
    app = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
    # Execute
    at = open_page(app, "app_pages/runs.py", {"runs_status": "succeeded"})
    # Assert
    assert not at.exception
    assert _ids(at) == [crowded["oldest"][:8]]
    assert f"{QUEUED} queued · 1 succeeded" in texts(at)
    assert "runs 1–1 of 1, newest first" in texts(at)
