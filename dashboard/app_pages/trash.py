"""Trash: the runs and sweeps the signed-in member deleted (an admin: everyone's), when each
will be purged for good, and a Restore button each. A restored run comes back with every
round, per-user row and checkpoint; a sweep with the runs deleted with it."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from api.schemas.trash import TrashedRun, TrashedSweep, TrashPublic
from dashboard import loaders, times, trash_view, ui
from dashboard.client import ApiError


def load() -> TrashPublic | None:
    """GET /trash, or None after showing why it could not be read."""
    try:
        return ui.client().trash()
    except ApiError as exc:
        ui.show_error(exc)
        return None


def restore(kind: str, ident: str) -> None:
    """Restore one run or sweep, then say so and show the trash afresh."""
    c = ui.client()
    call = c.restore_run if kind == "run" else c.restore_sweep
    if ui.try_call(call, ident) is not None:
        st.toast(f"Restored {kind} {ident[:8]}")
        loaders.runs.clear()
        loaders.runs_page.clear()
        loaders.sweeps.clear()


def buttons(kind: str, rows: list[TrashedRun] | list[TrashedSweep], now: datetime) -> None:
    """A Restore button for each trashed run or sweep."""
    for row in rows:
        st.button(
            trash_view.restore_label(row, now),
            key=f"restore_{kind}_{row.id}",
            icon=":material/restore_from_trash:",
            on_click=restore,
            args=(kind, row.id),
        )


def runs_section(runs: list[TrashedRun], now: datetime) -> None:
    """The table of trashed runs and a Restore button under it for each."""
    st.subheader("Runs")
    frame = trash_view.runs_table(runs, now, times.zone(st.context.timezone))
    st.dataframe(frame, hide_index=True, key="trash_runs")
    buttons("run", runs, now)


def sweeps_section(sweeps: list[TrashedSweep], now: datetime) -> None:
    """The table of trashed sweeps and a Restore button under it for each."""
    st.subheader("Sweeps")
    frame = trash_view.sweeps_table(sweeps, now, times.zone(st.context.timezone))
    st.dataframe(frame, hide_index=True, key="trash_sweeps")
    buttons("sweep", sweeps, now)


def render() -> None:
    """The page: how long the trash keeps things, then the trashed sweeps and runs."""
    st.title("Trash")
    body = load()
    if body is None:
        return
    days = trash_view.days_text(body.trash_days)
    st.caption(
        f"Deleted runs and sweeps stay here for {days} (FEDGEN_TRASH_DAYS), then the workers "
        "delete them for good. A run of a deleted sweep comes back with its sweep."
    )
    now = datetime.now(UTC)
    if not body.runs and not body.sweeps:
        st.info("The trash is empty.")
    if body.sweeps:
        sweeps_section(body.sweeps, now)
    if body.runs:
        runs_section(body.runs, now)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
