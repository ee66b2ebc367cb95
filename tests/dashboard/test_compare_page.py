"""The Compare page on a sweep in flight (AppTest against a real API): running runs drawn.

One lab of its own (the session lab of test_pages.py counts its runs): a 3-run sweep with
one run succeeded, one running (rounds written through the worker's own write path, as
it goes) and one queued.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from fedgen import metric_names
from lab.db import session_scope
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from tests.support.apptest import open_page
from tests.support.dashboard_lab import Lab, start_lab, tiny_spec
from tests.support.fakes import FakeRunner
from worker.claimed_run import execute_run

LEASE = "compare-page-test"


@pytest.fixture(scope="module")
def sweep_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, dict[str, Any]]]:
    """A lab with a sweep of 3 runs: [0] succeeded, [1] running at round 2, [2] queued."""
    lab = start_lab(tmp_path_factory.mktemp("compare-lab"))
    with lab.client() as c:
        base = tiny_spec(rounds=6, partition={"num_users": 4, "alpha": 0.1})
        sweep = c.post(
            "/sweeps", json={"name": "live", "base": base, "grid": {"seed": [0, 1, 2]}}
        ).json()
    ids = sweep["run_ids"]
    status = execute_run(
        ids[0],
        lab.app.state.sessionmaker,
        runner=FakeRunner(),
        settings=lab.settings,
        worker_name="test-worker",
    )
    assert status == "succeeded"
    with session_scope(lab.app.state.sessionmaker) as s:
        runs_repo.claim(s, uuid.UUID(ids[1]), worker="w", token=LEASE, device="cpu", lease_s=600)
    write_rounds(lab, ids[1], range(3))
    yield lab, {"sweep_id": sweep["id"], "run_ids": ids}
    lab.stop()


def write_rounds(lab: Lab, run_id: str, rounds: range) -> None:
    """Rounds of the running run, through the worker's write path."""
    with session_scope(lab.app.state.sessionmaker) as s:
        for r in rounds:
            metrics_repo.write_round(
                s,
                uuid.UUID(run_id),
                LEASE,
                round_=r,
                users=[],
                checkpoints=[],
                lease_s=600,
                metrics={"test_acc": 0.3 + r / 20, "time_total_ms": 10.0},
            )


@pytest.fixture
def env(sweep_lab: tuple[Lab, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The dashboard pointed at this module's lab, with empty caches."""
    lab, seeded = sweep_lab
    monkeypatch.setenv("FEDGEN_API_URL", lab.url)
    monkeypatch.setenv("FEDGEN_TOKEN", lab.token)
    st.cache_data.clear()
    return {"lab": lab, **seeded}


def _open(sweep_id: str, extra: dict[str, str] | None = None) -> AppTest:
    app = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
    return open_page(app, "app_pages/compare.py", params={"sweep": sweep_id, **(extra or {})})


def _traces(at: AppTest) -> list[dict[str, Any]]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return list(spec["data"])


def test_compare_draws_a_running_run_and_follows_its_new_rounds(env: dict[str, Any]) -> None:
    """The band counts the running run; its latest round is marked; a rerun fetches only new
    rounds and shows them; the queued run is listed as not started."""
    # Prepare
    succeeded, running, queued = env["run_ids"]
    at = _open(env["sweep_id"])
    assert not at.exception
    first = {t["meta"]["kind"]: t for t in _traces(at) if t.get("meta")}
    cached = at.session_state["cmp_cache"].runs
    # Execute: two more rounds land, then the page refreshes
    write_rounds(env["lab"], running, range(3, 5))
    st.cache_data.clear()  # the 1 s cache of the refresh loader
    at.run()
    later = {t["meta"]["kind"]: t for t in _traces(at) if t.get("meta")}
    # Assert
    assert first["mean"]["name"] == "all (n=2, 1 of 3 running, 1 queued)"
    assert first["running"]["meta"]["rounds"] == {running: 2}
    assert later["running"]["meta"]["rounds"] == {running: 4}
    assert later["mean"]["meta"]["last_round"] == 6  # the succeeded run's rounds 0..6
    assert cached[running].rounds == [0, 1, 2, 3, 4]
    assert cached[succeeded].status == "succeeded"
    captions = "\n".join(c.value for c in at.caption)
    assert "Not started (1)" in captions
    assert "(queued)" in captions
    assert "n=2 from round 0" in captions
    assert "Refreshes by itself" in captions
    assert queued not in cached or cached[queued].rounds == []


def test_compare_ungrouped_names_the_running_run(env: dict[str, Any]) -> None:
    """One line per run: the running run is named "· running"; readable metric names."""
    # Execute
    at = _open(env["sweep_id"], {"group": "none"})
    # Assert
    assert not at.exception
    names = [t["name"] for t in _traces(at)]
    assert any(n.endswith("· running") for n in names)
    assert "running (latest round)" in names
    assert at.selectbox(key="cmp_metric").format_func("user_acc_min") == "worst user's accuracy"
    # The metric list is the one declared (fedgen.metric_names: `compare=True`), in its order.
    assert at.selectbox(key="cmp_metric").options == [
        metric_names.title(k) for k in metric_names.COMPARE_METRICS
    ]


def test_compare_stops_refreshing_when_every_run_ended(env: dict[str, Any]) -> None:
    """The running run succeeds and the queued one is cancelled: one last refresh draws them
    as ended (no running marker; the cancelled run listed as not started) and the timer stops."""
    # Prepare
    _, running, queued = env["run_ids"]
    at = _open(env["sweep_id"])
    assert "Refreshes by itself" in "\n".join(c.value for c in at.caption)
    write_rounds(env["lab"], running, range(5, 7))
    with session_scope(env["lab"].app.state.sessionmaker) as s:
        runs_repo.finish(s, uuid.UUID(running), LEASE, status="succeeded", summary={})
    with env["lab"].client() as c:
        c.post(f"/runs/{queued}/cancel").raise_for_status()
    st.cache_data.clear()
    # Execute
    at.run()
    # Assert
    assert not at.exception
    kinds = [t["meta"]["kind"] for t in _traces(at) if t.get("meta")]
    assert kinds == ["mean"]
    assert at.session_state["cmp_cache"].runs[running].rounds == list(range(7))
    captions = "\n".join(c.value for c in at.caption)
    assert "Refreshes by itself" not in captions
    assert "(cancelled)" in captions
