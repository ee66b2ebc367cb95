"""The dashboard's door to the API: the connection settings, the client, and calls whose
failures are said on the page (one sentence each, never a stack trace).

The client is the public one (`fedgen_lab.endpoints.LabApi`, the researchers' client too):
the dashboard has no HTTP code of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from dashboard.browser_address import browser_address
from fedgen_lab.endpoints import LabApi, open_api
from fedgen_lab.errors import LabAuthError, LabError, LabUnreachable
from fedgen_lab.http import Transport, settings_from_env

T = TypeVar("T")

TOKEN_KEY = "conn_api_token"  # the token a browser signed in with (no FEDGEN_TOKEN)
# A page waits at most this long for an answer: a page that hangs says nothing.
TIMEOUT_S = 10.0


def connection() -> tuple[str, str]:
    """(base URL, token): always FEDGEN_API_URL, the one API this dashboard talks to (a visitor
    can point it nowhere else: no server-side request to an address a browser chose); the
    token is FEDGEN_TOKEN when set (it stays in this process: no widget, no cookie, nothing
    rendered holds it), else the one this browser session signed in with."""
    env_url, env_token = settings_from_env()
    return env_url, env_token or str(st.session_state.get(TOKEN_KEY) or "")


def open_client(
    url: str,
    token: str,
    *,
    transport: Transport | None = None,
    forwarded_for: str | None = None,
) -> LabApi:
    """A client of the API at `url` with `token`, as the pages use it: a short timeout, no
    retries (a page says a busy server at once and its own refresh asks again, instead of
    holding the script run through the back-offs), and the browser named.

    The browser's address (default: this Streamlit session's) goes as X-Forwarded-For, for
    the API's failure budgets; the API believes it only from FEDGEN_TRUSTED_PROXIES."""
    browser = forwarded_for or browser_address()
    headers = {"X-Forwarded-For": browser} if browser else None
    return open_api(
        url, token, timeout=TIMEOUT_S, transport=transport, headers=headers, max_retries=0
    )


def client() -> LabApi:
    """A client for the current connection settings."""
    url, token = connection()
    try:
        return open_client(url, token)
    except LabError as exc:  # a malformed URL or token: say so, never a stack trace
        show_error(exc)
        st.stop()
        raise  # unreachable: st.stop() ends the script run


def show_error(exc: LabError) -> None:
    """One clear sentence for each kind of failure (never a stack trace)."""
    if isinstance(exc, LabUnreachable):
        fix = "The dashboard reaches it at FEDGEN_API_URL; ask whoever runs the lab."
        st.error(f"{exc.message} {fix}", icon=":material/power_off:")
    elif isinstance(exc, LabAuthError) and exc.status == 403:
        st.error(f"{exc.message}.", icon=":material/key:")  # the token is fine, the right is not
    elif isinstance(exc, LabAuthError):
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
    except LabError as exc:
        show_error(exc)
        st.stop()
        raise  # unreachable: st.stop() raises


def try_call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Like `call` but returns None after showing the error, so the page goes on."""
    try:
        return fn(*args, **kwargs)
    except LabError as exc:
        show_error(exc)
        return None
