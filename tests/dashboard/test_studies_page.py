"""The Paper page (one study at a time) through AppTest against the real API."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from lab.db import session_scope
from lab.repository import workers as workers_repo
from tests.support.apptest import open_page, texts
from tests.support.dashboard_lab import Lab, start_lab
from tests.support.factories import public_run
from tests.support.fakes import FakeRunner
from worker.claimed_run import execute_run

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
        body = (
            c.post("/studies/table3", json={"dataset": "emnist-letters", "seeds": 1, "rounds": 3})
            .raise_for_status()
            .json()
        )
    for run_id in body["sweep"]["run_ids"]:
        status = execute_run(
            run_id,
            lab.app.state.sessionmaker,
            runner=FakeRunner(),
            settings=lab.settings,
            worker_name="test-worker",
        )
        assert status == "succeeded", status
    return str(body["sweep"]["id"])


def _study(app_path: str, name: str) -> AppTest:
    at = open_page(app_path, PAGE)
    at.selectbox(key="study_name").set_value(name).run()
    return at


def _launch_form(app_path: str, name: str) -> AppTest:
    """The study's launch form: behind "Launch again" once the study has a sweep."""
    at = _study(app_path, name)
    again = [b for b in at.checkbox if b.key == f"study_again_{name}_0"]
    if again:
        again[0].check().run()
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
    assert cells.loc[cells["row"] == "FedAvg", "seed std"].item() == "–"  # one seed


def test_study_cost_table_behind_its_toggle(app_path: str, lab_env: Lab, table3_sweep: str) -> None:
    """The cost toggle adds a table of the cells' cost per run: the scripted runner's 0.1 MB
    up and down and 100 ms + 20 ms a round, summed over the run's rounds."""
    # Prepare
    at = _study(app_path, "table3")
    n_tables = len(at.dataframe)
    # Execute
    at.toggle(key="study_cost_table3").set_value(True).run()
    # Assert
    assert not at.exception
    costs = at.dataframe[n_tables].value
    fedavg = costs.loc[costs["row"] == "FedAvg"].iloc[0]
    assert fedavg["n"] == 1
    assert (fedavg["MB up"], fedavg["MB down"], fedavg["MB total"]) == ("0.4", "0.4", "0.8")
    assert (fedavg["clients' training (s)"], fedavg["server (s)"]) == ("0.4", "0.08")


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
    # The synthetic dataset has no paper numbers: no paper table, ours and the cells.
    assert set(at.dataframe[1].value["verdict"]) == {"no paper number"}
    assert len(at.dataframe) == 2


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
    """Seeds and rounds set on the page go to the URL; a link (a reload) with them shows them.
    (table2 is launched by now: its form is behind "Launch again", which such a link ticks.)"""
    # Prepare
    at = _launch_form(app_path, "table2")
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
    from vocab.schemas.studies import LaunchedSweep

    sweep = LaunchedSweep(
        sweep_id="s1",
        name="study table2 v1 · synthetic · seeds=1 · rounds=6",
        owner="alice",
        version=1,
        dataset="synthetic",
        created_at="2025-03-01T11:55:00Z",
        count=12,
        status_counts={"succeeded": 3, "failed": 1, "running": 2, "queued": 6},
    )
    label = sweep_label(sweep, datetime(2025, 3, 1, 12, 0, tzinfo=UTC), UTC)
    assert label == (
        "study table2 v1 · synthetic · seeds=1 · rounds=6 · launched 5 min ago (11:55) · 4/12 done"
    )
    assert "T" not in label.split("·")[-2]  # no ISO timestamp


@pytest.fixture
def fmnist_worker(study_lab: Lab) -> Iterator[str]:
    """A live cpu worker that can load fashion-mnist only, removed afterwards."""
    name = "cpu-slot0@paper-test"
    with session_scope(study_lab.app.state.sessionmaker) as s:
        workers_repo.register(
            s, name, ["cpu"], 1, host="paper-test", capabilities={"datasets": ["fashion-mnist"]}
        )
    yield name
    with session_scope(study_lab.app.state.sessionmaker) as s:
        workers_repo.unregister(s, name)


def _launched(lab: Lab, study: str, dataset: str) -> list[dict]:
    with lab.client() as c:
        sweeps = c.get(f"/studies/{study}", params={"dataset": dataset}).json()["launched"]
    return [s for s in sweeps if s["dataset"] == dataset]


def test_paper_page_offers_what_a_live_worker_has(
    app_path: str, lab_env: Lab, fmnist_worker: str
) -> None:
    """Workers with fashion-mnist only: Table 2 starts on fashion-mnist, its paper dataset is
    marked, launching it is refused until a confirmation that says why the runs would wait,
    and once queued its runs say what they wait for."""
    # Prepare
    at = _launch_form(app_path, "table2")
    picker = at.selectbox(key="study_dataset_table2")
    # Assert: the default and the marks
    assert picker.value == "fashion-mnist"
    assert "emnist-letters (the paper's) — no live worker has it" in picker.options
    assert "fashion-mnist" in picker.options
    # Execute: the paper's dataset, launched without the confirmation
    picker.set_value("emnist-letters")
    at.number_input(key="study_seeds_table2").set_value(1)
    at.number_input(key="study_rounds_table2").set_value(2).run()
    warning = "\n".join(w.value for w in at.warning)
    assert "No live worker has emnist-letters: its 6 runs would wait" in warning
    assert "(the live cpu workers have: fashion-mnist)" in warning
    assert at.button(key="study_launch").disabled  # a browser cannot click it
    assert _launched(lab_env, "table2", "emnist-letters") == []
    # Execute: confirmed
    at.checkbox(key="study_wait_ok_table2_emnist-letters").check().run()
    assert not at.button(key="study_launch").disabled
    at.button(key="study_launch").click().run()
    # Assert: queued, and the page says why its runs wait
    assert not at.exception
    assert [s["count"] for s in _launched(lab_env, "table2", "emnist-letters")] == [6]
    assert "0/6 runs finished · 6 queued" in at.get("progress")[0].proto.text
    waits = "\n".join(w.value for w in at.warning)
    assert "6 of 6 runs wait for a worker with dataset emnist-letters" in waits


def test_table2_description_names_its_own_columns(app_path: str, lab_env: Lab) -> None:
    """The description is built from the columns: on fashion-mnist it lists that dataset's
    presets, as the column headers do; the estimate is never a rounded-away "0 min"."""
    # Prepare
    at = _launch_form(app_path, "table2")
    # Execute
    at.selectbox(key="study_dataset_table2").set_value("fashion-mnist")
    at.number_input(key="study_seeds_table2").set_value(1)
    at.number_input(key="study_rounds_table2").set_value(1).run()
    # Assert
    assert not at.exception
    page = texts(at)
    assert "On fashion-mnist the columns are: FedAvg, FedGen cnn0 [64,256]" in page
    assert "FedGen cnn3 [16,64]" in page  # MNIST family's cnn3, not EMNIST's [32,64]
    assert "0 min" not in page
    assert re.search(r"estimated CPU time \*\*\d+(\.\d)? s\*\*", page), page


def test_estimate_and_waiting_words() -> None:
    """The estimate says seconds under a minute and minutes with one decimal; a study's
    waiting runs are counted per reason."""
    from dashboard.study_view import waiting_note
    from fedgen.studies.costs import format_duration

    # Execute / Assert
    assert format_duration(20) == "20 s"
    assert format_duration(4.24) == "4.2 s"
    assert format_duration(150) == "2.5 min"
    assert format_duration(3 * 3600) == "3.0 h"
    runs = [
        public_run(waiting_reason="no live worker has dataset mnist"),
        public_run(waiting_reason=None),
        public_run(waiting_reason="no live worker has dataset mnist"),
    ]
    assert waiting_note(runs).startswith("2 of 3 runs wait for a worker with dataset mnist.")
    assert waiting_note(runs[1:2]) is None


def test_cells_frame_shows_the_tables_std_and_the_other() -> None:
    """A seed-std study shows ± the seed std with the official std beside it, and a tuned
    cell's choice; a paper study the other way round."""
    from dashboard.study_view import cells_frame, ours_matrix
    from vocab.schemas.studies import StudyResults

    # Prepare
    cell = {
        "row": "α=0.1, T=20",
        "column": "FedProx",
        "mean": 80.0,
        "std": 1.0,
        "seed_std": 2.5,
        "n": 5,
        "n_seeds": 5,
        "runs": 15,
        "paper_mean": None,
        "paper_std": None,
        "delta": None,
        "verdict": "no paper number",
        "tuned": {"lr": 0.01, "algorithm.mu": 0.01},
        "budget": 3,
        **{
            f"{c}_{s}": None
            for c in ("mb_up", "mb_down", "mb_total", "client_train_s", "server_s")
            for s in ("mean", "seed_std")
        },
    }
    base = {
        "study": "table1-tuned",
        "version": 1,
        "dataset": "mnist",
        "statistic": "val_best",
        "statistic_text": "val_best",
        "std_text": "±",
        "unit": "%",
        "rows": [cell["row"]],
        "columns": [cell["column"]],
        "runs_total": 15,
        "runs_done": 15,
        "unmatched": 0,
        "cells": [cell],
        "sweep_id": "s",
        "sweep_name": "s",
        "sweep_version": 1,
        "status_counts": {},
    }
    # Execute
    seed = StudyResults.model_validate({**base, "std_kind": "seed"})
    official = StudyResults.model_validate({**base, "std_kind": "official"})
    # Assert
    row = cells_frame(seed).iloc[0]
    assert (row["ours"], row["official std"], row["n"]) == ("80.00 ± 2.50", "1.00", "5/15")
    assert row["chosen by validation"] == "lr=0.01, algorithm.mu=0.01 (best of 3)"
    assert ours_matrix(seed).iloc[0, 0] == "80.00 ± 2.50 (n=5)"
    assert cells_frame(official).iloc[0]["ours"] == "80.00 ± 1.00"
    assert cells_frame(official).iloc[0]["seed std"] == "2.50"


def test_a_study_without_paper_numbers_shows_no_paper_table(app_path: str, lab_env: Lab) -> None:
    """table1-tuned (no paper cells): ours and the cells, no table of dashes for the paper."""
    # Prepare
    with lab_env.client() as c:
        c.post("/studies/table1-tuned", json={"seeds": 1, "rounds": 1}).raise_for_status()
    # Execute
    at = _study(app_path, "table1-tuned")
    # Assert
    assert not at.exception
    assert [s.value for s in at.subheader if str(s.value).startswith("The paper")] == []
    assert "The paper has no number for any cell of this table." in texts(at)
    ours, cells = at.dataframe  # and no third, the paper's
    assert list(ours.value.index)[:2] == [
        "α=0.05, T=20, per-user test",
        "α=0.05, T=20, global test",
    ]
    assert "chosen by validation" in cells.value.columns


def test_an_unlaunched_study_on_data_the_paper_never_used_shows_no_paper_table(
    app_path: str, lab_env: Lab
) -> None:
    """Table 1 on Fashion-MNIST (the paper ran it on MNIST, EMNIST and CelebA): not launched,
    and no table of dashes for the paper, but a line saying it has none."""
    # Prepare
    at = AppTest.from_file(app_path, default_timeout=30)
    at.query_params.update({"page": "paper", "study": "table1", "dataset": "fashion-mnist"})
    # Execute
    at.run()
    # Assert
    assert not at.exception
    said = texts(at)
    assert "The paper reports no numbers for this study on fashion-mnist." in said
    assert [s.value for s in at.subheader if str(s.value).startswith("The paper")] == []
    assert [d for d in at.dataframe if d.key == "study_paper_only"] == []
