"""A run's note and tags on a page: shown, and editable by its owner or an admin (PATCH).

The Runs and Live pages share this one editor; who may edit is `permissions.may_change`.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

import streamlit as st

from dashboard import api_client, loaders, permissions, runs_table, times
from vocab.schemas.runs import RunPublic
from vocab.schemas.users import UserPublic

NOT_YOURS = "Only the run's owner or an admin may change its note and tags"


def editor(run: RunPublic, me: UserPublic | None, key: str) -> RunPublic | None:
    """The note and tags of `run` in a form (disabled, saying why, for others); the run as the
    API returns it after a Save, else None. `key` prefixes the widget keys (one per page)."""
    rid = run.id
    allowed = permissions.may_change(run, me)
    why = None if allowed else NOT_YOURS
    with st.form(f"{key}_annotate_{rid}", border=False):
        note = st.text_area(
            "Note (every lab member can read it)",
            run.note,
            max_chars=10_000,
            key=f"{key}_note_{rid}",
            disabled=not allowed,
            help=why or "Notes and tags are visible to every member of the lab",
        )
        tags = st.text_input(
            "Tags",
            ", ".join(run.tags),
            key=f"{key}_tags_{rid}",
            disabled=not allowed,
            help=why or "Comma-separated; each at most 64 characters, at most 32 tags",
        )
        saved = st.form_submit_button(
            "Save note and tags", disabled=not allowed, help=why, key=f"{key}_save_{rid}"
        )
    edited = edited_line(run, datetime.now(UTC), times.zone(st.context.timezone))
    if edited:
        st.caption(edited)
    if not saved:
        return None
    updated = api_client.try_call(
        api_client.client().annotate_run, rid, tags=parse_tags(tags or ""), note=note or ""
    )
    if updated is not None:
        loaders.runs.clear()
        loaders.runs_page.clear()
        loaders.run.clear()
        st.toast("Note and tags saved", icon=":material/check:")
    return updated


def edited_line(run: RunPublic, now: datetime, tz: tzinfo) -> str | None:
    """`Last edited by alice · 5 min ago (14:03)`, the time as the rest of the dashboard shows
    it (`times.when`, in the viewer's zone); None for a run nobody annotated."""
    if not run.annotated_by:
        return None
    return f"Last edited by {run.annotated_by} · {times.when(run.annotated_at, now, tz)}"


def summary(run: RunPublic) -> str:
    """The tags and the note's first line as one Markdown line (empty when there are none)."""
    tags = " ".join(f":blue-badge[{t}]" for t in run.tags)
    note = runs_table.first_line(run.note, width=120)
    note = f":material/sticky_note_2: {note}" if note else ""
    return " ".join(p for p in (tags, note) if p)


def parse_tags(text: str) -> list[str]:
    """Tags typed as `a, b, c`: stripped, empty ones dropped, each once, in order."""
    return list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
