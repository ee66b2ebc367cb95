"""Trash: the runs and sweeps the signed-in member deleted (an admin: everyone's), when each
will be purged for good, and a Restore button each. A restored run comes back with every
round, per-user row and checkpoint; a sweep with the runs deleted with it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import streamlit as st

from dashboard import loaders, times, trash_view, ui
from dashboard.client import ApiError


def load() -> dict[str, Any] | None:
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
        loaders.sweeps.clear()


def section(kind: str, rows: list[dict[str, Any]], now: datetime) -> None:
    """The table of trashed runs or sweeps and a Restore button under it for each."""
    tz = times.zone(st.context.timezone)
    table = trash_view.runs_table if kind == "run" else trash_view.sweeps_table
    st.subheader("Runs" if kind == "run" else "Sweeps")
    st.dataframe(table(rows, now, tz), hide_index=True, key=f"trash_{kind}s")
    for row in rows:
        st.button(
            trash_view.restore_label(row, kind, now),
            key=f"restore_{kind}_{row['id']}",
            icon=":material/restore_from_trash:",
            on_click=restore,
            args=(kind, str(row["id"])),
        )


def render() -> None:
    """The page: how long the trash keeps things, then the trashed sweeps and runs."""
    st.title("Trash")
    body = load()
    if body is None:
        return
    days = trash_view.days_text(float(body.get("trash_days", 7)))
    st.caption(
        f"Deleted runs and sweeps stay here for {days} (FEDGEN_TRASH_DAYS), then the workers "
        "delete them for good. A run of a deleted sweep comes back with its sweep."
    )
    now = datetime.now(UTC)
    if not body["runs"] and not body["sweeps"]:
        st.info("The trash is empty.")
    if body["sweeps"]:
        section("sweep", body["sweeps"], now)
    if body["runs"]:
        section("run", body["runs"], now)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
