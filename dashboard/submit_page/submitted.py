"""What the Submit page says after a submission: the queued run or sweep and links to it.

Kept in the session until a field of the form changes, so any later rerun of the page (a box
committing late, another widget) shows it again: a member who looks away comes back to what was
queued, not to a form that looks as if nothing had been sent.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from dashboard import run_picker

DONE_KEY = "submit_done"  # a Submitted: the last submission of this form


@dataclass(frozen=True)
class Submitted:
    """A queued run (`runs` None) or sweep (`runs`: how many it queued), and the run a Live
    link opens (a sweep's first)."""

    id: str
    runs: int | None
    first_run: str | None

    @property
    def message(self) -> str:
        if self.runs is None:
            return f"Queued run {self.id}."
        return f"Queued sweep {self.id} with {self.runs} runs."


def remember(done: Submitted) -> None:
    """Record `done` as the form's last submission and make its run the one Live shows."""
    st.session_state[DONE_KEY] = done
    if done.first_run:
        run_picker.watch(done.first_run)


def forget() -> None:
    """The form changed: its last submission is no longer what it shows."""
    st.session_state.pop(DONE_KEY, None)


def show() -> None:
    """The last submission's message and links, if the form has one."""
    done: Submitted | None = st.session_state.get(DONE_KEY)
    if done is None:
        return
    st.success(done.message)
    if done.runs is not None:
        st.page_link(
            "app_pages/compare.py",
            label="Compare its runs as they land",
            icon=":material/compare_arrows:",
            query_params={"sweep": done.id},
        )
    if done.first_run:
        st.page_link(
            "app_pages/live.py",
            label="Watch it on the Live run page"
            if done.runs is None
            else "Watch its first run on the Live run page",
            icon=":material/monitoring:",
            query_params={"run": done.first_run},
        )
