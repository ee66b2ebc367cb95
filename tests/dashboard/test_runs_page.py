"""The Runs page through AppTest on the real API: counts, queue fields, picking rows, URL state."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fedgen_lab.endpoints import LabApi
from tests.support.apptest import open_page, texts
from tests.support.dashboard_lab import Lab
from vocab.schemas.runs import RunsPublic

# The session's lab grows as other tests submit runs: one page holds them all.
WHOLE_LAB = {"runs_per_page": 500}


def _pick(at: Any, rows: list[int]) -> None:
    at.session_state["runs_table"] = {"selection": {"rows": rows, "columns": []}}
    at.run()


def _compare_link(at: Any) -> Any:
    """The Compare link under the table (the Lab page link may come first)."""
    return next(x.proto for x in at.get("page_link") if x.proto.page == "compare")


def _row_of(at: Any, run_id: str) -> int:
    ids = list(at.dataframe[0].value["id"])  # short ids: the first 8 characters
    return ids.index(run_id[:8])


@pytest.fixture
def queue_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's queue fields on queued runs (as the scheduler reports them)."""
    real = LabApi.list_runs
    start = datetime.now(UTC) + timedelta(minutes=30)

    def with_queue(self: LabApi, **filters: Any) -> RunsPublic:
        body = real(self, **filters)
        # A run with an expected start is one a live worker can take: no waiting reason.
        queue = {"queue_position": 2, "expected_start": start, "waiting_reason": None}
        runs = [r.model_copy(update=queue) if r.status == "queued" else r for r in body.data]
        return body.model_copy(update={"data": runs})

    monkeypatch.setattr(LabApi, "list_runs", with_queue)


def test_runs_page_counts_and_queue_fields(
    app_path: str, lab_env: dict[str, Any], queue_fields: None, lab: Lab
) -> None:
    """Status counts; a queued run shows its position and expected start; others a dash."""
    # Prepare: the session's lab also holds runs other page tests submitted
    with lab.client() as c:
        runs = c.get("/runs", params={"limit": 500}).json()["data"]
    statuses = [r["status"] for r in runs]
    own = {r["id"]: r["status"] for r in runs}
    # Execute
    at = open_page(app_path, "app_pages/runs.py", WHOLE_LAB)
    # Assert
    assert not at.exception
    want = f"{statuses.count('queued')} queued · {statuses.count('succeeded')} succeeded"
    assert {own[i] for i in lab_env["run_ids"]} == {"succeeded"}  # among those counted
    assert want in texts(at)
    df = at.dataframe[0].value
    queued = df[df["id"] == lab_env["queued_id"][:8]].iloc[0]
    assert queued["queue"] == "#2"
    # (the date too when the half hour crosses midnight)
    assert re.fullmatch(r"in (29|30) min \((\w{3} \d\d )?\d\d:\d\d\)", queued["expected start"])
    done = df[df["status"] == "succeeded"]
    assert set(done["queue"]) == {"—"}
    assert set(done["expected start"]) == {"—"}
    assert done["best acc (%)"].between(1, 100).all()  # percent, as in the tables


def test_runs_page_queue_fields_absent(
    app_path: str, lab_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the API's queue fields (an older server) the cells read a dash, never an error."""
    real = LabApi.list_runs

    def without_queue(self: LabApi, **filters: Any) -> RunsPublic:
        body = real(self, **filters)
        gone = {"queue_position": None, "expected_start": None}
        return body.model_copy(update={"data": [r.model_copy(update=gone) for r in body.data]})

    monkeypatch.setattr(LabApi, "list_runs", without_queue)
    at = open_page(app_path, "app_pages/runs.py", WHOLE_LAB)
    assert not at.exception
    df = at.dataframe[0].value
    queued = df[df["id"] == lab_env["queued_id"][:8]].iloc[0]
    assert (queued["queue"], queued["expected start"]) == ("—", "—")
    assert queued["running time"].startswith("waiting")


def test_rows_picked_in_the_table_link_to_compare(app_path: str, lab_env: dict[str, Any]) -> None:
    """Ticking two rows gives a Compare link carrying both run ids in the URL."""
    # Prepare
    at = open_page(app_path, "app_pages/runs.py", WHOLE_LAB)
    picked = lab_env["run_ids"][:2]
    # Execute
    _pick(at, [_row_of(at, i) for i in picked])
    # Assert
    assert not at.exception
    link = _compare_link(at)
    assert link.page == "compare"
    assert link.label == "Compare 2 runs"
    assert not link.disabled
    assert link.query_string == "runs=" + "%2C".join(picked)


def test_no_rows_picked_disables_compare(app_path: str, lab_env: dict[str, Any]) -> None:
    """With nothing ticked the Compare link is disabled and carries no ids."""
    at = open_page(app_path, "app_pages/runs.py", WHOLE_LAB)
    link = _compare_link(at)
    assert link.disabled
    assert link.query_string == ""


def test_runs_page_cancel_own_queued_run(app_path: str, lab_env: dict[str, Any], lab: Lab) -> None:
    """Ticking the queued run and pressing Cancel requests a cancel through the API."""
    # Prepare
    at = open_page(app_path, "app_pages/runs.py", WHOLE_LAB)
    _pick(at, [_row_of(at, lab_env["queued_id"])])
    # Execute
    at.button(key="runs_cancel").click().run()
    # Assert
    assert not at.exception
    with lab.client() as c:
        run = c.get(f"/runs/{lab_env['queued_id']}").json()
    assert run["cancel_requested"] or run["status"] == "cancelled"


def test_runs_filters_live_in_the_url(app_path: str, lab_env: dict[str, Any], lab: Lab) -> None:
    """A link's ?status=&algorithm= sets the filters; changing one rewrites the link."""
    # Prepare
    from streamlit.testing.v1 import AppTest

    with lab.client() as c:  # the seeded FedGen runs (other tests may have left more)
        seeded = [c.get(f"/runs/{i}").json() for i in lab_env["run_ids"]]
    fedgen = {r["id"][:8] for r in seeded if r["spec"]["algorithm"]["name"] == "fedgen"}
    at = AppTest.from_file(app_path, default_timeout=30)
    at.query_params["status"] = "succeeded"
    at.query_params["algorithm"] = "fedgen"
    at.query_params["dataset"] = "no-such-dataset"  # a stale link: dropped, not an error
    # Execute
    at.run()
    shown = at.dataframe[0].value
    at.selectbox(key="runs_alg").set_value("fedavg").run()
    # Assert
    assert not at.exception
    assert set(shown["status"]) == {"succeeded"}
    assert len(fedgen) == 2
    assert fedgen <= set(shown["id"])
    assert all(r.startswith("FedGen · ") for r in shown["run"])  # compact: what differs, seed
    assert at.selectbox(key="runs_data").value == ""
    assert dict(at.query_params) == {"status": "succeeded", "algorithm": "fedavg"}


LONG_ERROR = (
    "data.folder.path: folder /nonexistent/lab/data/fashion-mnist-folder does not exist on "
    "this worker (give a path every worker of the queue can read, or a dataset by name)"
)


def test_runs_table_columns_and_a_failed_runs_whole_error(
    app_path: str, lab_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The columns one scans first lead the table (compact name, status, accuracy, seed, where
    it stands, error); a failed run's whole message is on the page, not only its cut cell."""
    # Prepare: one finished run reported as failed with a long, two-line error
    real = LabApi.list_runs
    failed_id = lab_env["run_ids"][0]

    def with_failure(self: LabApi, **filters: Any) -> RunsPublic:
        # The run reads as failed in every list, the failed runs' list and the counts too.
        wanted = filters.pop("status", None)
        limit = filters.pop("limit", 500)
        body = real(self, **filters, limit=500)  # the whole session lab: filtered here
        failure = {"status": "failed", "current_round": 2, "error": LONG_ERROR + "\nsee the docs"}
        runs = [r.model_copy(update=failure) if r.id == failed_id else r for r in body.data]
        counts = {**body.status_counts, "failed": body.status_counts.get("failed", 0) + 1}
        counts["succeeded"] -= 1
        shown = [r for r in runs if not wanted or r.status == wanted][:limit]
        return body.model_copy(update={"data": shown, "status_counts": counts})

    monkeypatch.setattr(LabApi, "list_runs", with_failure)
    # Execute
    at = open_page(app_path, "app_pages/runs.py", WHOLE_LAB)
    # Assert
    assert not at.exception
    table = at.dataframe[0]
    order = list(table.proto.column_order)
    assert order[:8] == ["run", "status", "final acc (%)", "seed", "progress", "owner", "id", "ETA"]
    assert order.index("error") < order.index("running time")
    df = table.value
    row = df[df["id"] == failed_id[:8]].iloc[0]
    assert row["error"] == f"in round 3 of 6: {LONG_ERROR}"
    # The compact form (its length is test_runs_view's: here it depends on what other tests
    # left in the shared lab, since a name lists the fields that differ among the runs shown).
    assert "algorithm=" not in row["run"]
    assert " · " in row["run"]
    assert row["run"].endswith(("s0", "s1"))
    codes = [c.value for c in at.code]
    assert f"Failed in round 3 of 6:\n{LONG_ERROR}\nsee the docs" in codes


def test_a_filter_on_an_unknown_spec_field_says_so(app_path: str, lab_env: dict[str, Any]) -> None:
    """`alpha=0.1` (the field is partition.alpha) or a value its type cannot hold: the API's
    messages under the filters, one per clause, not "No runs match"; the right field still
    lists runs."""
    # Execute
    unknown = open_page(
        app_path, "app_pages/runs.py", {"runs_where": "alpha=0.1; partition.min_samples=x"}
    )
    mistyped = open_page(app_path, "app_pages/runs.py", {"runs_where": "partition.alpha=abc"})
    right = open_page(app_path, "app_pages/runs.py", {"runs_where": "partition.alpha=0.1"})
    # Assert
    for at in (unknown, mistyped, right):
        assert not at.exception
        assert "No runs match these filters." not in texts(at)
    said = " ".join(e.value for e in unknown.error)
    assert "alpha is not a spec field; did you mean partition.alpha" in said
    # Every problem, one line each (not only the first); `_` escaped so it reads as typed.
    assert "- where: partition.min\\_samples is an integer or null; 'x' cannot match" in said
    assert not unknown.dataframe
    assert "partition.alpha is a number; 'abc' cannot match" in " ".join(
        e.value for e in mistyped.error
    )
    assert not right.error
    assert right.dataframe[0].value.shape[0] >= 1
