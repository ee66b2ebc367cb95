"""The Trash page (AppTest on the real API) and its pure tables (dashboard/trash_view.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from dashboard import trash_view
from tests.support.apptest import open_page, texts
from tests.support.dashboard_lab import Lab, tiny_spec
from vocab.schemas.trash import TrashedRun, TrashedSweep

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _row(**extra: Any) -> TrashedRun:
    fields = {
        "id": "1a2b3c4d-0000-0000-0000-000000000000",
        "owner": "alice",
        "algorithm": "fedgen",
        "dataset": "synthetic",
        "status": "cancelled",
        "sweep_id": None,
        "deleted_at": (NOW - timedelta(hours=1)).isoformat(),
        "deleted_by": "alice",
        "created_at": (NOW - timedelta(days=1)).isoformat(),
        "purge_after": (NOW + timedelta(days=6, hours=23)).isoformat(),
    }
    return TrashedRun.model_validate({**fields, **extra})


def test_tables_say_who_deleted_what_and_when_it_is_purged() -> None:
    """Runs and sweeps: deleted relative and local, the purge time ahead, short ids; a purge
    time already past reads 'at the next pass'."""
    late = _row(id="ffff0000-0000-0000-0000-000000000000", purge_after=NOW.isoformat())
    runs = trash_view.runs_table([_row(), late], NOW, UTC)
    sweep = TrashedSweep.model_validate(
        {**_row().model_dump(), "name": "grid", "runs": 4, "deleted_by": "admin"}
    )
    sweeps = trash_view.sweeps_table([sweep], NOW, UTC)
    assert list(runs.columns) == trash_view.RUN_COLUMNS
    first = runs.iloc[0].to_dict()
    assert first["run"] == "FedGen · Synth"  # as every page names it (run_name)
    assert first["deleted"] == "1 h 00 min ago (11:00)"
    assert first["purged"] == "in 6 d 23 h (Dec 10 11:00)"
    assert first["id"] == "1a2b3c4d"
    assert runs.iloc[1]["purged"] == "at the next pass"
    assert sweeps.iloc[0][["sweep", "runs", "deleted by"]].tolist() == ["grid", 4, "admin"]
    label = trash_view.restore_label(_row(sweep_id="abcdef12-0000"), NOW)
    assert label == "Restore run FedGen · Synth (sweep abcdef12) · 1a2b3c4d (purged in 6 d 23 h)"
    assert trash_view.days_text(7.0) == "7 days"
    assert trash_view.days_text(1) == "1 day"
    assert trash_view.days_text(0.5) == "0.5 days"


def test_trash_page_lists_a_deleted_run_and_restores_it(
    app_path: str, lab_env: dict[str, Any], lab: Lab
) -> None:
    """A run deleted through the API is listed with its purge time; its Restore button brings
    it back (GET /runs/{id} answers again) and it leaves the trash. (The lab is the session's:
    other tests may have left runs in its trash, so only this run's row is asserted.)"""
    with lab.client() as c:
        rid = c.post("/runs", json={"spec": tiny_spec(seed=41)}).raise_for_status().json()["id"]
        assert c.delete(f"/runs/{rid}").status_code == 204
    at = open_page(app_path, "app_pages/trash.py")
    assert not at.exception
    assert at.title[0].value == "Trash"
    assert "stay here for 7 days" in texts(at)
    shown = at.dataframe[0].value
    mine = shown[shown["id"] == rid[:8]]
    assert mine["status"].tolist() == ["cancelled"]
    button = next(b for b in at.button if b.key == f"restore_run_{rid}")

    button.click().run()

    assert not at.exception
    with lab.client() as c:
        assert c.get(f"/runs/{rid}").status_code == 200
        assert rid not in [r["id"] for r in c.get("/trash").json()["runs"]]
    assert f"restore_run_{rid}" not in [b.key for b in at.button]
