"""Trash: the runs and sweeps the signed-in member deleted (an admin: everyone's), when each
will be purged for good, and a Restore button each. A restored run comes back with every
round, per-user row and checkpoint; a sweep with the runs deleted with it."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from dashboard import api_client, loaders, times, trash_view
from fedgen_lab.errors import LabError
from vocab.schemas.trash import TrashedRun, TrashedSweep, TrashPublic


def load() -> TrashPublic | None:
    """GET /trash, or None after showing why it could not be read."""
    try:
        return api_client.client().trash()
    except LabError as exc:
        api_client.show_error(exc)
        return None


UNDO_KEY = "trash_undo"  # {"kind": "run" | "sweep", "id": what was just restored}


def _forget_lists() -> None:
    loaders.runs.clear()
    loaders.runs_page.clear()
    loaders.sweeps.clear()


def restore(kind: str, ident: str) -> None:
    """Restore one run or sweep; the page then says so, with an Undo and a link to it."""
    c = api_client.client()
    call = c.restore_run if kind == "run" else c.restore_sweep
    if api_client.try_call(call, ident) is not None:
        st.session_state[UNDO_KEY] = {"kind": kind, "id": ident}
        _forget_lists()


def undo(kind: str, ident: str) -> None:
    """Move what was just restored back to the Trash (the Undo button's callback)."""
    c = api_client.client()
    call = c.delete_run if kind == "run" else c.delete_sweep
    try:
        call(ident)
    except LabError as exc:
        api_client.show_error(exc)
        return
    st.session_state.pop(UNDO_KEY, None)
    st.toast(f"Moved {kind} {ident[:8]} back to the Trash")
    _forget_lists()


def undo_bar() -> None:
    """After a restore: what came back, where to see it, and an Undo button."""
    held = st.session_state.get(UNDO_KEY)
    if not held:
        return
    kind, ident = held["kind"], held["id"]
    note, undo_col, link_col = st.columns([5, 1, 1.4], vertical_alignment="center")
    note.success(f"Restored {kind} {ident[:8]}.", icon=":material/restore_from_trash:")
    undo_col.button(
        "Undo", key="trash_undo_button", icon=":material/undo:", on_click=undo, args=(kind, ident)
    )
    if kind == "run":
        link_col.page_link("app_pages/live.py", label="Open the run", query_params={"run": ident})
    else:
        link_col.page_link(
            "app_pages/compare.py", label="Open the sweep", query_params={"sweep": ident}
        )


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
    undo_bar()
    if not body.runs and not body.sweeps:
        st.info("The trash is empty.")
    if body.sweeps:
        sweeps_section(body.sweeps, now)
    if body.runs:
        runs_section(body.runs, now)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
