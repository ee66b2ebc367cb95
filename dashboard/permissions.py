"""What the signed-in member may do to a run: change it (cancel, delete, annotate) when they
own it or are an admin. No Streamlit.
"""

from __future__ import annotations

from vocab.schemas.runs import RunPublic
from vocab.schemas.users import UserPublic


def may_change(run: RunPublic, me: UserPublic | None) -> bool:
    """Whether the signed-in user may cancel, delete or annotate the run (owner or admin)."""
    if me is None:
        return False
    return me.is_admin or run.owner == me.name
