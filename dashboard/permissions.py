"""What the signed-in member may do to a run: change it (cancel, delete, annotate) when they
own it or are an admin. No Streamlit.
"""

from __future__ import annotations

from typing import Any


def may_change(run: dict[str, Any], me: dict[str, Any] | None) -> bool:
    """Whether the signed-in user may cancel, delete or annotate the run (owner or admin)."""
    if not me:
        return False
    return bool(me.get("is_admin")) or (
        me.get("name") is not None and run.get("owner") == me.get("name")
    )
