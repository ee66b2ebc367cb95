"""The Runs page's actions on the runs ticked in its table: compare, watch, cancel, clone,
delete (each offered for the member's own runs, any run for an admin, cancel and delete after a
confirmation), and one ticked run's details, note and tags."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import streamlit as st
import yaml

from dashboard import annotate, api_client, loaders, permissions, runs_table, times, trash_view
from fedgen_lab.errors import LabError
from vocab.run_status import ACTIVE
from vocab.schemas.runs import RunPublic
from vocab.schemas.users import UserPublic


def forget_selection() -> None:
    """A fresh table widget (no rows ticked): after a delete the old row numbers would point
    at other runs."""
    st.session_state["runs_table_gen"] = st.session_state.get("runs_table_gen", 0) + 1


def _why_not(picked: list[RunPublic], allowed: list[RunPublic], what: str) -> str:
    if not picked:
        return f"Tick runs in the table to {what} them"
    if not allowed:
        return f"Only a run's owner or an admin may {what} it: none of the runs picked is yours"
    return f"{what.capitalize()} the runs picked that are yours ({len(allowed)} of {len(picked)})"


@dataclass(frozen=True)
class Picked:
    """The runs ticked in the table, their names there, and who is signed in (None: unknown)."""

    runs: list[RunPublic]
    names: dict[str, str]
    me: UserPublic | None

    def mine(self) -> list[RunPublic]:
        """The picked runs the signed-in member may change."""
        return [r for r in self.runs if permissions.may_change(r, self.me)]


def cancel(p: Picked, slot: Any) -> None:
    """Cancel the picked active runs the user may change, after a confirmation."""
    active = [r for r in p.mine() if r.status in ACTIVE]
    label = f"Cancel {len(active)}…" if active else "Cancel…"
    with slot.popover(label, disabled=not active, help=_why_not(p.runs, active, "cancel")):
        st.markdown(
            f"Cancel {len(active)} {'run' if len(active) == 1 else 'runs'}? A queued run stops "
            "at once, a running one after its current round."
        )
        if st.button("Yes, cancel", key="runs_cancel", type="primary"):
            for run in active:
                if api_client.try_call(api_client.client().cancel_run, run.id) is not None:
                    st.toast(f"Cancel requested for {p.names[run.id]}")
            reload()


def delete(p: Picked, slot: Any) -> None:
    """Delete the picked runs the user may change (one or many), after a confirmation."""
    mine = p.mine()
    label = f"Delete {len(mine)}…" if mine else "Delete…"
    # Keyed by the table's generation: a delete starts a new one, so the popover that asked
    # closes instead of staying open over the table with nothing left to delete.
    gen = st.session_state.get("runs_table_gen", 0)
    with slot.popover(
        label, disabled=not mine, help=_why_not(p.runs, mine, "delete"), key=f"runs_del_pop_{gen}"
    ):
        others = len(p.runs) - len(mine)
        st.markdown(
            f"Move {len(mine)} {'run' if len(mine) == 1 else 'runs'} to the Trash? Unfinished "
            "ones are cancelled; each can be restored, with its metrics and checkpoints, "
            "from the Trash page until it is purged."
            + (f" The {others} picked that are not yours stay." if others else "")
        )
        for run in mine[:5]:
            st.caption(f"{p.names[run.id]} · {runs_table.short_id(run.id)}")
        if len(mine) > 5:
            st.caption(f"… and {len(mine) - 5} more")
        if st.button("Yes, delete", key="runs_delete", type="primary"):
            gone = [r for r in mine if _delete(r.id)]
            st.session_state[UNDO_KEY] = Moved([r.id for r in gone], trash_note(len(gone)))
            reload()
            forget_selection()
            st.rerun(scope="fragment")


UNDO_KEY = "runs_undo"  # a Moved: the runs just moved to the Trash


@dataclass(frozen=True)
class Moved:
    """The runs just moved to the Trash (`ids`) and what was said of it (`note`)."""

    ids: list[str]
    note: str


def undo_bar() -> None:
    """After a delete: what went to the Trash, an Undo button (restores them) and the Trash
    page's link, until the member undoes it or deletes again."""
    held: Moved | None = st.session_state.get(UNDO_KEY)
    if not held or not held.ids:
        return
    ids = held.ids
    note, undo_col, link_col = st.columns([5, 1, 1.4], vertical_alignment="center")
    note.success(held.note, icon=":material/delete:")
    if undo_col.button("Undo", key="runs_undo_button", icon=":material/undo:"):
        back = sum(
            api_client.try_call(api_client.client().restore_run, rid) is not None for rid in ids
        )
        st.session_state.pop(UNDO_KEY, None)
        st.toast(f"Restored {back} {'run' if back == 1 else 'runs'} from the Trash")
        reload()
        st.rerun(scope="fragment")
    link_col.page_link("app_pages/trash.py", label="Open the Trash", icon=":material/delete:")


def reload() -> None:
    """Forget the cached lists: the next draw reads what the action changed."""
    loaders.runs.clear()
    loaders.runs_page.clear()


def trash_note(moved: int) -> str:
    """`Moved 2 runs to Trash (restorable for 7 days)`: FEDGEN_TRASH_DAYS, as the API says."""
    body = api_client.try_call(api_client.client().trash, limit=1)
    days = trash_view.days_text(body.trash_days) if body else "a few days"
    return f"Moved {moved} {'run' if moved == 1 else 'runs'} to Trash (restorable for {days})"


def _delete(run_id: str) -> bool:
    """DELETE one run; False after saying why it could not be deleted."""
    try:
        api_client.client().delete_run(run_id)
    except LabError as exc:
        api_client.show_error(exc)
        return False
    return True


def actions(p: Picked) -> None:
    """Compare / watch / cancel / clone / delete the runs picked in the table."""
    ids = [r.id for r in p.runs]
    b1, b2, b3, b4, b5 = st.columns([3, 2, 2, 2, 2])  # room for "Compare 12 runs" at 1,280 px
    b1.page_link(
        "app_pages/compare.py",
        label=f"Compare {len(ids)} run{'' if len(ids) == 1 else 's'}"
        if ids
        else "Compare (tick runs)",
        help=None if ids else "Tick runs in the table to compare them",
        icon=":material/compare_arrows:",
        query_params={"runs": ",".join(ids)} if ids else None,
        disabled=not ids,
    )
    b2.page_link(
        "app_pages/live.py",
        label="Watch live",
        icon=":material/monitoring:",
        query_params={"run": ids[0]} if len(ids) == 1 else None,
        disabled=len(ids) != 1,
    )
    cancel(p, b3)
    with b4.popover("Clone…", disabled=len(ids) != 1):
        changes_text = st.text_area(
            "Changes (YAML)",
            "seed: 1\n",
            key="runs_clone_changes",
            help="Nested spec fields to change",
        )
        if st.button("Clone run", key="runs_clone"):
            try:
                changes = yaml.safe_load(changes_text) or {}
            except yaml.YAMLError as exc:
                st.error(f"Not valid YAML: {exc}")
                return
            new = api_client.try_call(api_client.client().clone_run, ids[0], changes)
            if new:
                st.success(f"Queued clone {runs_table.short_id(new.id)}")
                reload()
    delete(p, b5)


def details(run: RunPublic, p: Picked, now: datetime) -> None:
    """The one picked run: its full id and times, and its note and tags (editable)."""
    tz = times.zone(st.context.timezone)
    st.subheader(p.names[run.id])
    left, right = st.columns([3, 2])
    with left:
        if annotate.editor(run, p.me, key="runs") is not None:
            st.rerun(scope="fragment")  # the table shows the new note and tags
    rows = runs_table.details(run, now, tz)
    right.dataframe(
        {"": [k for k, _ in rows], "value": [v for _, v in rows]},
        hide_index=True,
        key="runs_details",
    )
    right.markdown(
        "**Reproduce it locally** (the copy button is at the block's right): writes its "
        "spec and prints the `fedgen run` command",
    )
    right.code(export_command(run), language="bash")


def export_command(run: RunPublic) -> str:
    """`fedgen export 1a2b3c4d`: the short id the table shows (any unique prefix will do)."""
    return f"fedgen export {runs_table.short_id(run.id)}"
