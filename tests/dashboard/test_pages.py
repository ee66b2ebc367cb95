"""Every page through streamlit.testing's AppTest against the real API on a test database."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.live_history import History
from fedgen import metric_names
from lab.models import Run
from tests.support.apptest import open_page, texts
from tests.support.dashboard_lab import Lab


def test_runs_page_lists_runs(app_path: str, lab_env: dict[str, Any], lab: Lab) -> None:
    """The Runs page shows all runs with the signed-in user and no exception."""
    # Prepare: the session's lab also holds runs other tests left (500: one page of them all)
    with lab.client() as c:
        ids = [r["id"] for r in c.get("/runs", params={"limit": 500}).json()["data"]]
    # Execute
    at = open_page(app_path, "app_pages/runs.py", {"runs_per_page": 500})
    # Assert
    assert not at.exception
    assert set(lab_env["run_ids"]) | {lab_env["queued_id"]} <= set(ids)
    assert f"runs 1–{len(ids)} of {len(ids)}, newest first" in texts(at)
    assert "Signed in as **alice**" in texts(at)
    assert len(at.dataframe) >= 1


def test_submit_shows_field_errors_from_the_api(app_path: str, lab_env: dict[str, Any]) -> None:
    """An invalid users_per_round comes back from /spec/validate and shows on the form."""
    # Prepare
    at = open_page(app_path, "app_pages/submit.py")
    at.number_input(key="submit_one_partition.num_users").set_value(3)
    at.number_input(key="submit_one_users_per_round").set_value(5)
    # Execute
    at.button(key="submit_validate").click().run()
    # Assert
    assert not at.exception
    assert "users_per_round=5 exceeds partition.num_users=3" in texts(at)


def test_submit_single_run_queues_it(app_path: str, lab_env: dict[str, Any], lab: Lab) -> None:
    """A valid form submits a run that the API lists as queued."""
    # Prepare
    at = open_page(app_path, "app_pages/submit.py")
    at.selectbox(key="submit_one_data.name").set_value("synthetic")
    # The default 20-user split cannot be drawn from 2,000 synthetic samples (refused at submit).
    at.number_input(key="submit_one_partition.num_users").set_value(5)
    at.number_input(key="submit_one_users_per_round").set_value(3)
    at.number_input(key="submit_one_rounds").set_value(2)
    at.text_input(key="submit_tags").set_value("pagetest")
    # Execute
    at.button(key="submit_go").click().run()
    # Assert
    assert not at.exception
    assert "Queued run" in texts(at)
    with lab.client() as c:
        runs = c.get("/runs", params={"tag": "pagetest"}).json()["data"]
    assert len(runs) == 1
    assert runs[0]["spec"]["rounds"] == 2


def test_submit_sweep_lists_and_yaml(app_path: str, lab_env: dict[str, Any], lab: Lab) -> None:
    """Sweep mode turns comma lists into a grid and posts it to /sweeps."""
    # Prepare
    at = open_page(app_path, "app_pages/submit.py")
    at.radio(key="submit_mode").set_value("Sweep").run()
    at.multiselect(key="submit_sw_data.name").set_value(["synthetic"])
    at.multiselect(key="submit_sw_algorithm.name").set_value(["fedavg", "fedprox"])
    at.text_input(key="submit_sw_seed").set_value("0, 1")
    at.text_input(key="submit_sw_rounds").set_value("2")
    at.text_input(key="submit_sw_partition.num_users").set_value("5")
    at.text_input(key="submit_sw_users_per_round").set_value("3")
    at.text_input(key="submit_sweep_name").set_value("from-form")
    at.run()
    # Execute
    at.button(key="submit_go").click().run()
    # Assert
    assert not at.exception
    assert "expands to **4** runs" in texts(at)
    assert "Queued sweep" in texts(at)
    assert any("grid:" in c.value for c in at.code)
    with lab.client() as c:
        sweeps = {s["name"]: s["id"] for s in c.get("/sweeps").json()["data"]}
    assert "from-form" in sweeps
    # A link to the sweep's Compare view, right under the confirmation.
    links = [(e.proto.page, e.proto.query_string) for e in at.get("page_link")]
    assert ("compare", f"sweep={sweeps['from-form']}") in [
        (page.rsplit("/", 1)[-1].removesuffix(".py"), query) for page, query in links
    ], links


def test_submit_sweep_rejects_bad_list(app_path: str, lab_env: dict[str, Any]) -> None:
    """A non-number in a list field is flagged next to the field, nothing is sent."""
    # Prepare
    at = open_page(app_path, "app_pages/submit.py")
    at.radio(key="submit_mode").set_value("Sweep").run()
    at.text_input(key="submit_sw_partition.alpha").set_value("0.1, abc").run()
    # Execute
    at.button(key="submit_go").click().run()
    # Assert
    assert not at.exception
    assert "'abc' is not a valid number" in texts(at)


def test_live_page_shows_curves(app_path: str, lab_env: dict[str, Any]) -> None:
    """A finished FedGen run shows accuracy, users, timing and generator charts."""
    # Prepare
    run_id = lab_env["run_ids"][2]  # fedgen, seed 0
    # Execute
    at = open_page(app_path, "app_pages/live.py", {"live_run_id": run_id})
    # Assert
    assert not at.exception
    assert at.session_state[f"live_hist_{run_id}"].rounds == list(range(7))
    charts = {c.proto.id for c in at.get("plotly_chart")}
    assert len(charts) == 6  # accuracy, loss, users, timing, generator losses, generator accuracy
    # Every chart declared in fedgen.metric_names.LIVE_CHARTS is drawn (the FedGen run logs all).
    for chart in metric_names.LIVE_CHARTS:
        assert any(i.endswith(f"live_{chart.key}") for i in charts), (chart.key, charts)


def test_live_page_lists_the_data_files(app_path: str, lab_env: dict[str, Any], lab: Lab) -> None:
    """A run whose info records the files it read shows them in a "Data files" expander, and
    how its clients trained in a caption."""
    # Prepare: what a worker records (a fake runner's info has none)
    run_id = lab_env["run_ids"][3]
    files = [{"root": "/lab/data", "path": "MNIST/raw/t", "size": 4096, "sha256": "ef" * 32}]
    with lab.app.state.sessionmaker() as s:
        row = s.get(Run, uuid.UUID(run_id))
        row.info = {
            **row.info,
            "data_files": files,
            "execution": "batched",
            "execution_reason": "auto: 2 CPU threads",
            "batch_clients": 10,
        }
        s.commit()
    # Execute
    at = open_page(app_path, "app_pages/live.py", {"live_run_id": run_id})
    # Assert
    assert not at.exception
    assert any(e.label.startswith("Data files: 1 read") for e in at.expander)
    assert any(
        c.value == "Clients trained batched, 10 per computation · auto: 2 CPU threads"
        for c in at.caption
    )
    shown = [d.value for d in at.dataframe if "sha256" in d.value]
    assert len(shown) == 1
    assert shown[0].to_dict("records") == [
        {"path": "MNIST/raw/t", "root": "/lab/data", "size": "4 KiB", "sha256": "ef" * 32}
    ]


def test_live_page_fetches_only_new_rounds(app_path: str, lab_env: dict[str, Any]) -> None:
    """With a cached history the page asks only for later rounds and keeps the cache."""
    # Prepare
    run_id = lab_env["run_ids"][0]
    cached = History(rounds=[0, 1, 2], metrics={"test_acc": [0.5, 0.6, 0.7]})
    # Execute
    at = open_page(
        app_path, "app_pages/live.py", {"live_run_id": run_id, f"live_hist_{run_id}": cached}
    )
    # Assert
    assert not at.exception
    hist = at.session_state[f"live_hist_{run_id}"]
    assert hist.rounds == list(range(7))
    assert hist.metrics["test_acc"][:3] == [0.5, 0.6, 0.7]  # rounds 0-2 were not re-fetched


def test_compare_page_groups_seeds(app_path: str, lab_env: dict[str, Any]) -> None:
    """Compare on the sweep groups 4 runs into 2 algorithm bands and fills time-to-target."""
    # Execute
    at = open_page(app_path, "app_pages/compare.py", {"compare_ids": lab_env["run_ids"]})
    # Assert
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1
    ttt = at.dataframe[0].value
    assert sorted(ttt["group"]) == ["algorithm=fedavg", "algorithm=fedgen"]
    assert list(ttt["runs"]) == [2, 2]


def test_compare_page_wall_clock_and_no_grouping(app_path: str, lab_env: dict[str, Any]) -> None:
    """Per-run lines with smoothing and a wall-clock x axis render without error."""
    # Prepare
    at = open_page(app_path, "app_pages/compare.py", {"compare_ids": lab_env["run_ids"]})
    # Execute
    at.radio(key="cmp_x").set_value("wall-clock")
    at.slider(key="cmp_smooth").set_value(0.5)
    at.radio(key="cmp_group_mode").set_value("none").run()
    # Assert
    assert not at.exception
    ttt = at.dataframe[0].value
    assert len(ttt) == 4
    # each run by its display name (run_name.compact_names), not a UUID
    assert all(" · s" in g and "-" not in g for g in ttt["group"])
    assert len(at.get("download_button")) == 1  # CSV in the ungrouped mode too
    assert at.query_params["group"] == "none"
    assert at.query_params["x"] == "wall-clock"


def _compare_chart(at: AppTest) -> dict[str, Any]:
    import json

    return json.loads(at.get("plotly_chart")[0].proto.spec)


def test_compare_page_url_reproduces_the_view(app_path: str, lab_env: dict[str, Any]) -> None:
    """A link with sweep, metric, grouping, filter and log axis opens exactly that view."""
    # Execute
    at = open_page(
        app_path,
        "app_pages/compare.py",
        params={
            "sweep": lab_env["sweep_id"],
            "metric": "test_loss",
            "group": "none",
            "log": "1",
            "show": "FedGen · Synth · s0|FedGen · Synth · s1",
            "points": "100",
        },
    )
    # Assert
    assert not at.exception
    assert at.selectbox(key="cmp_sweep").value == lab_env["sweep_id"]
    assert at.selectbox(key="cmp_metric").value == "test_loss"
    assert at.radio(key="cmp_group_mode").value == "none"
    assert at.toggle(key="cmp_log").value is True
    assert at.number_input(key="cmp_points").value == 100
    fig = _compare_chart(at)
    assert fig["layout"]["yaxis"]["type"] == "log"
    names = sorted(t["name"] for t in fig["data"])
    assert names == ["FedGen · Synth · s0", "FedGen · Synth · s1"]
    assert len(at.get("download_button")) == 1


def test_compare_page_shows_accuracy_in_percent(app_path: str, lab_env: dict[str, Any]) -> None:
    """Accuracy curves and the target are in % (as the tables); a link with a fraction target
    from before (target=0.6) still means 60 %."""
    # Execute
    at = open_page(
        app_path, "app_pages/compare.py", params={"sweep": lab_env["sweep_id"], "target": "0.6"}
    )
    # Assert
    assert not at.exception
    fig = _compare_chart(at)
    assert fig["layout"]["yaxis"]["title"]["text"] == "test accuracy (%)"
    (line, *_) = [t for t in fig["data"] if t.get("mode") == "lines" and "fill" not in t]
    y = line["y"]  # plotly's typed array: {"dtype": "f8", "bdata": base64}
    assert np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]).max() > 1.0
    assert at.number_input(key="cmp_target").value == pytest.approx(60.0)


def test_compare_page_writes_its_view_to_the_url(app_path: str, lab_env: dict[str, Any]) -> None:
    """Choosing a sweep and a metric puts them (and only non-defaults) in the query string."""
    # Prepare
    at = open_page(app_path, "app_pages/compare.py")
    # Execute
    at.selectbox(key="cmp_sweep").set_value(lab_env["sweep_id"]).run()
    at.selectbox(key="cmp_metric").set_value("train_loss").run()
    # Assert
    assert not at.exception
    assert dict(at.query_params) == {"sweep": lab_env["sweep_id"], "metric": "train_loss"}
    assert len(at.get("download_button")) == 1  # grouped CSV


def test_paper_tables_page(app_path: str, lab_env: dict[str, Any]) -> None:
    """The sweep's Table 1 matrix and the Table 3 timing view render."""
    # Execute
    at = open_page(app_path, "app_pages/paper_tables.py")
    at.selectbox(key="tables_sweep").set_value(lab_env["sweep_id"]).run()
    # Assert
    assert not at.exception
    t3 = at.dataframe[-1].value
    assert list(t3["row"]) == ["FedAvg", "FedGen B_G=32"]
    assert t3["ours_ratio"].iloc[1] == pytest.approx(58.0 / 48.0)


def test_inspect_page(app_path: str, lab_env: dict[str, Any]) -> None:
    """The partition heatmap and the PCA of sampled generator latents render."""
    # Execute
    at = open_page(app_path, "app_pages/inspect.py", {"live_run_id": lab_env["run_ids"][2]})
    # Assert
    assert not at.exception
    assert not at.error
    assert at.multiselect(key="inspect_rounds").value == [1, 4, 6]
    assert len(at.get("plotly_chart")) == 2
    assert "fp-0.1" in texts(at)


def test_inspect_page_url_reproduces_the_view(app_path: str, lab_env: dict[str, Any]) -> None:
    """?run=&rounds=&per_class=&seed= opens that run's generator view, and the URL keeps it."""
    # Execute
    run_id = lab_env["run_ids"][2]
    at = open_page(
        app_path,
        "app_pages/inspect.py",
        params={"run": run_id, "rounds": "1,6", "per_class": "20", "seed": "3"},
    )
    # Assert
    assert not at.exception
    # The picker's key follows its labels (run_picker.pick_run); the current one is kept in state.
    assert at.selectbox(key=at.session_state["inspect_run_widget"]).value == run_id
    assert at.multiselect(key="inspect_rounds").value == [1, 6]
    assert at.slider(key="inspect_per_class").value == 20
    assert at.number_input(key="inspect_seed").value == 3
    assert at.query_params["rounds"] == "1,6"
    assert at.query_params["run"] == run_id


def test_sweep_tables_url_reproduces_the_view(app_path: str, lab_env: dict[str, Any]) -> None:
    """?sweep=&statistic=final opens that sweep's tables with the final-round statistic."""
    # Execute
    at = open_page(
        app_path,
        "app_pages/paper_tables.py",
        params={"sweep": lab_env["sweep_id"], "statistic": "final"},
    )
    # Assert
    assert not at.exception
    assert at.selectbox(key="tables_sweep").value == lab_env["sweep_id"]
    assert at.radio(key="tables_stat").value == "final"
    assert at.query_params["statistic"] == "final"


def test_inspect_page_before_start(app_path: str, lab_env: dict[str, Any]) -> None:
    """A queued run has no partition yet: a clear message, not an error."""
    # Execute
    at = open_page(app_path, "app_pages/inspect.py", {"live_run_id": lab_env["queued_id"]})
    # Assert
    assert not at.exception
    assert "has not started yet" in texts(at)


@pytest.mark.parametrize(
    "page",
    [
        "app_pages/runs.py",
        "app_pages/compare.py",
        "app_pages/live.py",
        "app_pages/lab.py",
        "app_pages/paper_tables.py",
        "app_pages/inspect.py",
    ],
)
def test_pages_with_bad_token(
    app_path: str, lab_env: dict[str, Any], page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong token gives a clear message on every page, never an exception."""
    # Prepare
    monkeypatch.setenv("FEDGEN_TOKEN", "wrong")
    # Execute
    at = open_page(app_path, page)
    # Assert
    assert not at.exception
    assert "rejected the token" in texts(at)


def test_unreachable_server(app_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No server at the URL: the page says so instead of failing."""
    # Prepare
    monkeypatch.setenv("FEDGEN_API_URL", "http://127.0.0.1:9")
    # Execute
    at = open_page(app_path, "app_pages/runs.py")
    # Assert
    assert not at.exception
    assert "Cannot reach the lab server" in texts(at)
