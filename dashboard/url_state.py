"""URL state: a page seeds its widgets from the query string once (`from_url`) and writes
its current view back (`to_url`), so the address bar is always a link to this view."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from fedgen import specdict


def from_url(
    key: str,
    param: str,
    default: Any,
    cast: Callable[[str], Any] = str,
    choices: list[Any] | None = None,
) -> Any:
    """Seed the widget `key` from `?param=` the first time the page runs in this session.

    A value that does not parse with `cast` or is not among `choices` falls back to
    `default` (a stale or hand-edited link never breaks the page). Returns the state value.
    """
    if key not in st.session_state:
        value = default
        raw = st.query_params.get(param)
        if raw is not None:
            try:
                parsed = cast(raw)
            except (TypeError, ValueError):
                parsed = default
            if choices is None or parsed in choices:
                value = parsed
        st.session_state[key] = value
    return st.session_state[key]


def list_from_url(
    key: str, param: str, default: list[Any], choices: list[Any], sep: str = ","
) -> list[Any]:
    """Like `from_url` for a multiselect: `?param=a,b` (unknown values dropped)."""
    if key not in st.session_state:
        raw = st.query_params.get(param)
        picked = [v for v in (raw or "").split(sep) if v in choices] if raw else []
        st.session_state[key] = picked or list(default)
    return list(st.session_state[key])


def to_url(params: dict[str, Any]) -> None:
    """Make the query string exactly `params` (None, "" and [] are left out; lists join with ,)."""
    out: dict[str, str] = {}
    for name, value in params.items():
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        elif isinstance(value, bool):
            value = "1" if value else "0"
        elif isinstance(value, float):
            value = specdict.format_value(value)
        out[name] = str(value)
    if dict(st.query_params) != out:
        st.query_params.from_dict(out)
