"""The Paper page (one study at a time) through AppTest against the real API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.dashboard.lab import Lab, start_lab
from tests.dashboard.test_pages import open_page, texts
from tests.fakes import FakeRunner
from worker.execution import execute_run

PAGE = "app_pages/studies.py"


@pytest.fixture(scope="module")
def study_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A lab of its own, so these sweeps never change what the other pages' tests count."""
    server = start_lab(tmp_path_factory.mktemp("study-lab"))
    yield server
    server.stop()


@pytest.fixture
def lab_env(study_lab: Lab, monkeypatch: pytest.MonkeyPatch) -> Lab:
    """Point the dashboard at this module's lab; start with empty Streamlit caches."""
    monkeypatch.setenv("FEDGEN_API_URL", study_lab.url)
    monkeypatch.setenv("FEDGEN_TOKEN", study_lab.token)
    st.cache_data.clear()
    return study_lab


@pytest.fixture(scope="module")
def table3_sweep(study_lab: Lab) -> str:
    """A finished Table 3 study on EMNIST (1 seed, 3 rounds) with scripted timings.

    The scripted runner reports 48 ms per update for FedAvg and 58 ms for FedGen:
    ratio 1.208, within the paper's 1.200 ± 0.047 at B_G = 8 and below (better than)
    its 1.260 ± 0.049 at B_G = 128.
    """
    lab = study_lab
    with lab.client() as c:
        body = c.post(
            "/studies/table3", json={"dataset": "emnist-letters", "seeds": 1, "rounds": 3}
        ).raise_for_status().json()  # fmt: skip
    for run_id in body["sweep"]["run_ids"]:
        status = execute_run(
            run_id, lab.app.state.sessionmaker, runner=FakeRunner(), settings=lab.settings,
            worker_name="test-worker",
        )  # fmt: skip
        assert status == "succeeded", status
    return str(body["sweep"]["id"])


def _study(app_path: str, name: str) -> AppTest:
    at = open_page(app_path, PAGE)
    at.selectbox(key="study_name").set_value(name).run()
    return at


def test_study_table_with_verdicts(app_path: str, lab_env: Lab, table3_sweep: str) -> None:
    """Table 3's sweep: progress complete, ours beside the paper's, a verdict per cell."""
    # Execute
    at = _study(app_path, "table3")
    # Assert
    assert not at.exception
    assert "6/6 runs finished" in at.get("progress")[0].proto.text
    cells = at.dataframe[2].value  # ours, the paper, cell by cell
    by_row = dict(zip(cells["row"], cells["verdict"], strict=True))
    assert by_row["FedAvg"] == "reference"
    assert by_row["FedGen B_G=8"] == "within"
    assert by_row["FedGen B_G=128"] == "better"
    assert cells.loc[cells["row"] == "FedAvg", "ours"].item() == "48.00 ± 0.00"
    assert cells.loc[cells["row"] == "FedAvg", "paper"].item() == "47.66 ± 1.68"
    ours = at.dataframe[0].value
    assert ours.loc["FedGen B_G=32"].item() == "58.00 ± 0.00 (n=1)"
    assert "**4** within" in texts(at)


def test_launch_button_creates_the_sweep(app_path: str, lab_env: Lab) -> None:
    """Launch with overrides posts the study; the sweep is listed with its progress."""
    # Prepare
    at = _study(app_path, "table2")
    at.selectbox(key="study_dataset_table2").set_value("synthetic")
    at.number_input(key="study_seeds_table2").set_value(1)
    at.number_input(key="study_rounds_table2").set_value(2).run()
    assert "**6** runs" in texts(at)
    # Execute
    at.button(key="study_launch").click().run()
    # Assert
    assert not at.exception
    assert "Queued study sweep" in texts(at)
    assert "0/6 runs finished" in at.get("progress")[0].proto.text
    with lab_env.client() as c:
        launched = c.get("/studies/table2").json()["launched"]
    assert [(s["dataset"], s["count"]) for s in launched] == [("synthetic", 6)]
    # The synthetic dataset has no paper numbers.
    assert set(at.dataframe[2].value["verdict"]) == {"no paper number"}


def test_unlaunched_study_shows_the_paper(app_path: str, lab_env: Lab) -> None:
    """A study never launched shows the paper's matrix and says it is not launched."""
    # Execute
    at = _study(app_path, "table4")
    # Assert
    assert not at.exception
    assert "Not launched yet" in texts(at)
    paper = at.dataframe[0].value
    assert paper.loc["α=0.05, predictor only", "FedGen"] == "63.60 ± 0.63"
    assert paper.loc["α=10, whole model", "FedGen"] == "–"


def test_study_page_with_bad_token(
    app_path: str, lab_env: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong token: a clear message, no exception."""
    # Prepare
    monkeypatch.setenv("FEDGEN_TOKEN", "wrong")
    # Execute
    at = open_page(app_path, PAGE)
    # Assert
    assert not at.exception
    assert "rejected the token" in texts(at)


def test_overrides_live_in_the_url(app_path: str, lab_env: Lab) -> None:
    """Seeds and rounds set on the page go to the URL; a link (a reload) with them shows them."""
    # Prepare
    at = _study(app_path, "table2")
    # Execute
    at.number_input(key="study_seeds_table2").set_value(1)
    at.number_input(key="study_rounds_table2").set_value(7).run()
    linked = AppTest.from_file(app_path, default_timeout=30)
    linked.query_params.update({"page": "paper", "study": "table2", "seeds": "1", "rounds": "7"})
    linked.run()
    # Assert
    assert (at.query_params.get("seeds"), at.query_params.get("rounds")) == ("1", "7")
    assert not linked.exception
    assert linked.number_input(key="study_seeds_table2").value == 1
    assert linked.number_input(key="study_rounds_table2").value == 7


def test_sweep_label_is_human() -> None:
    """The picker names a launched sweep, when in words and its runs done out of all."""
    from datetime import UTC, datetime

    from dashboard.study_view import sweep_label

    sweep = {
        "name": "study table2 v1 · synthetic · seeds=1 · rounds=6",
        "created_at": "2025-03-01T11:55:00Z",
        "count": 12,
        "status_counts": {"succeeded": 3, "failed": 1, "running": 2, "queued": 6},
    }
    label = sweep_label(sweep, datetime(2025, 3, 1, 12, 0, tzinfo=UTC), UTC)
    assert label == (
        "study table2 v1 · synthetic · seeds=1 · rounds=6 · launched 5 min ago (11:55) · 4/12 done"
    )
    assert "T" not in label.split("·")[-2]  # no ISO timestamp
