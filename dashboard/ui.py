"""Shared Streamlit helpers: the connection settings, the client, error display, URL state.

URL state: a page seeds its widgets from the query string once (`from_url`) and writes
its current view back (`to_url`), so the address bar is always a link to this view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from api.schemas.runs import RunPublic
from dashboard.client import ApiAuthError, ApiError, ApiUnreachable, LabClient, settings_from_env
from fedgen import specdict

T = TypeVar("T")

TOKEN_KEY = "conn_api_token"  # the token a browser signed in with (no FEDGEN_TOKEN)


def connection() -> tuple[str, str]:
    """(base URL, token): always FEDGEN_API_URL, the one API this dashboard talks to (a visitor
    can point it nowhere else: no server-side request to an address a browser chose); the
    token is FEDGEN_TOKEN when set (it stays in this process: no widget, no cookie, nothing
    rendered holds it), else the one this browser session signed in with."""
    env_url, env_token = settings_from_env()
    return env_url, env_token or str(st.session_state.get(TOKEN_KEY) or "")


def client() -> LabClient:
    """A client for the current connection settings."""
    url, token = connection()
    try:
        return LabClient(url, token)
    except ApiError as exc:  # a malformed URL or token: say so, never a stack trace
        show_error(exc)
        st.stop()
        raise  # unreachable: st.stop() ends the script run


def show_error(exc: ApiError) -> None:
    """One clear sentence for each kind of failure (never a stack trace)."""
    if isinstance(exc, ApiUnreachable):
        fix = "The dashboard reaches it at FEDGEN_API_URL; ask whoever runs the lab."
        st.error(f"{exc.message} {fix}", icon=":material/power_off:")
    elif isinstance(exc, ApiAuthError) and exc.status == 403:
        st.error(f"{exc.message}.", icon=":material/key:")  # the token is fine, the right is not
    elif isinstance(exc, ApiAuthError):
        # Signed in through the browser (no FEDGEN_TOKEN) there is no token field: the token
        # was revoked since it was checked at sign-in.
        fix = "Check the dashboard's FEDGEN_TOKEN (set where the dashboard is started)."
        if not settings_from_env()[1]:
            fix = "Sign out (in the sidebar) and sign in again with a valid token."
        st.error(f"{exc.message}. {fix}", icon=":material/key:")
    else:
        st.error(exc.message, icon=":material/error:")


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run an API call; on failure show the message and stop this script run (or fragment)."""
    try:
        return fn(*args, **kwargs)
    except ApiError as exc:
        show_error(exc)
        st.stop()
        raise  # unreachable: st.stop() raises


def try_call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Like `call` but returns None after showing the error, so the page goes on."""
    try:
        return fn(*args, **kwargs)
    except ApiError as exc:
        show_error(exc)
        return None


def text_columns(helps: dict[str, str]) -> dict[str, Any]:
    """`st.dataframe` column configs of text columns from column name -> help (the tooltip of
    its header); merge them with other configs in a page's `column_config`."""
    return {name: st.column_config.TextColumn(name, help=text) for name, text in helps.items()}


def run_label(run: RunPublic, name: str | None = None) -> str:
    """A run for select boxes: its name among the runs listed (`compare_view.run_names`; the
    run alone when not given), its status, the short id last."""
    if name is None:
        from dashboard.compare_view import run_names

        name = run_names([run]).get(run.id, "?")
    return f"{name} · {run.status} · {run.id[:8]}"


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


def pick_run(url: str, token: str, key: str) -> tuple[str, dict[str, RunPublic]]:
    """The shared run picker: the `?run=` link or the last watched run first; stops on no runs.

    Returns the chosen run id and every listed run by id (a linked run that is not on the
    first page of the list is fetched and added).
    """
    from dashboard import loaders

    runs = call(loaders.runs, url, token)
    if not runs:
        st.info("No runs yet. Submit one on the **Submit** page.")
        st.stop()
    by_id = {r.id: r for r in runs}
    wanted = st.query_params.get("run") or st.session_state.get("live_run_id")
    if wanted and wanted not in by_id:
        extra = try_call(client().get_run, wanted)
        if extra:
            by_id = {wanted: extra, **by_id}
    ids = list(by_id)
    from dashboard.run_name import compact_names

    names = compact_names(list(by_id.values()))  # the Runs table's names for the same runs
    run_id: str = st.selectbox(
        "Run",
        ids,
        index=ids.index(wanted) if wanted in by_id else 0,
        key=key,
        format_func=lambda i: run_label(by_id[i], names.get(i)),
    )
    st.session_state["live_run_id"] = run_id
    st.query_params["run"] = run_id  # the address bar links to this run's view
    return run_id, by_id
