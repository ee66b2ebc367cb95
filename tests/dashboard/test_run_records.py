"""Typed views of a run's free-form dicts (dashboard.run_records) and the Runs page's filters
(dashboard.runs_page.run_filters.RunFilters)."""

from __future__ import annotations

from dataclasses import replace

from dashboard.run_records import RunSummaryView, RunVersionsView
from dashboard.runs_page.run_filters import RunFilters
from vocab.run_status import RunStatus


def test_summary_view_reads_the_keys_it_has() -> None:
    """A summary's accuracies as attributes; none before the run has a summary; others kept."""
    view = RunSummaryView.of({"final_acc": 0.8765, "best_acc": 0.9, "statistic": "final"})
    assert (view.final_acc, view.best_acc, view.top5_mean) == (0.8765, 0.9, None)
    assert view.model_extra == {"statistic": "final"}
    assert RunSummaryView.of(None).final_acc is None
    assert RunSummaryView.of({"final_acc": 1}).final_acc == 1.0


def test_versions_view_lists_numerics_changes() -> None:
    """`numerics_changed`: each change's round and its changed numerics; none when absent,
    null, or an entry is not an object."""
    versions = {
        "torch": "2.5",
        "numerics_changed": [{"round": 10, "torch_threads": ["2", "1"]}, "junk"],
    }
    (change,) = RunVersionsView.of(versions).numerics_changed
    assert change.round == 10
    assert change.changed() == {"torch_threads": ["2", "1"]}
    assert RunVersionsView.of({"torch": "2.5"}).numerics_changed == []
    assert RunVersionsView.of({"numerics_changed": None}).numerics_changed == []
    assert RunVersionsView.of(None).numerics_changed == []


def test_run_filters_as_query_parameters() -> None:
    """Every filter named, `where` as a list of clauses, as GET /runs took the dict."""
    filters = RunFilters(status="running", where=("partition.alpha=0.1",))
    assert filters.params() == {
        "status": "running",
        "algorithm": "",
        "dataset": "",
        "owner": "",
        "tag": "",
        "where": ["partition.alpha=0.1"],
        "q": "",
    }
    failed = replace(filters, status=RunStatus.FAILED)
    assert failed.params()["status"] == "failed"
    assert not any(RunFilters().params().values())
