"""The sign-in gate of a dashboard that has no token of its own (the lab's docker-compose).

Without FEDGEN_TOKEN the dashboard serves many lab members, each with their own token: a
browser that has none is shown one sign-in form *instead of* the page, so a shared link never
runs its page unauthenticated (no "missing bearer token" boxes, and no widget seeded from
the link while the data it names could not be read). The query string is left untouched,
so once signed in the same script run shows exactly the view the link describes.

The token is checked against GET /me before it is kept, then kept in the session and in the
browser (`dashboard.token_store`: a cookie, never the URL), so a reload signs in by itself.
With FEDGEN_TOKEN set (a personal laptop, `make demo`) there is no gate and no cookie.
"""

from __future__ import annotations

import streamlit as st

from dashboard import api_client, loaders, token_store
from fedgen_lab.errors import LabAuthError, LabError
from fedgen_lab.http import settings_from_env
from vocab.schemas.users import UserPublic

FORM_TOKEN_KEY = "signin_token"  # the form's password field
_ERROR_KEY = "signin_error"  # the message shown on the form (a rejected token, ...)
_KEEP_COOKIE_KEY = "signin_keep_cookie"  # the cookie's token could not be checked: keep it
HOW_TO_GET_ONE = (
    "Your API token identifies you to the lab server. Don't have one? Ask a lab admin, or "
    "create one on the lab server with `fedgen-lab users create <your name>` (it prints the "
    "token on its last line)."
)
KEPT_WHERE = (
    "This browser keeps the token in a cookie for 30 days (never in the address bar); "
    "**Sign out** in the sidebar forgets it."
)


def browser_mode() -> bool:
    """True when the dashboard process has no token of its own: each browser signs in."""
    return not settings_from_env()[1]


def _reason(exc: LabAuthError) -> str:
    """The server's own words for a refused token ("invalid token"), else the whole message."""
    return exc.detail if isinstance(exc.detail, str) and exc.detail else exc.message


def _check(url: str, token: str) -> UserPublic:
    """GET /me with `token` (cached briefly, as the sidebar's "Signed in as")."""
    return loaders.me(url, token)


def current_user() -> UserPublic | None:
    """The signed-in user of this browser session, or None when the sign-in form is due.

    The session's token (signed in on the form), else the browser's cookie, each checked
    against GET /me; a token the server rejects is dropped (and the cookie expired), with
    the reason shown on the form.
    """
    url = api_client.connection()[0]
    st.session_state.pop(_KEEP_COOKIE_KEY, None)
    token = st.session_state.get(api_client.TOKEN_KEY) or ""
    from_cookie = False
    if not token:
        token, from_cookie = token_store.stored_token(), True
    if not token:
        return None
    try:
        user = _check(url, token)
    except LabAuthError as exc:
        token_store.forget(token)
        st.session_state.pop(api_client.TOKEN_KEY, None)
        what = "The token saved in this browser" if from_cookie else "Your token"
        st.session_state[_ERROR_KEY] = (
            f"{what} is no longer accepted by the lab server ({_reason(exc)}). Sign in again."
        )
        return None
    except LabError as exc:
        # The server is down or unreachable: say so, but keep the cookie for the next try.
        st.session_state[_KEEP_COOKIE_KEY] = True
        st.session_state[_ERROR_KEY] = exc.message
        return None
    st.session_state[api_client.TOKEN_KEY] = token
    st.session_state.pop(_ERROR_KEY, None)
    return user


def _submit() -> None:
    """The form's callback: keep the pasted token if GET /me accepts it, else say why not."""
    token = str(st.session_state.get(FORM_TOKEN_KEY) or "").strip()
    st.session_state[FORM_TOKEN_KEY] = ""  # the field never holds a token past this run
    if not token:
        st.session_state[_ERROR_KEY] = "Paste your API token into the field first."
        return
    url = api_client.connection()[0]
    try:
        _check(url, token)
    except LabAuthError as exc:
        st.session_state[_ERROR_KEY] = (
            f"That token was not accepted by the lab server ({_reason(exc)}). Check that it "
            "was copied whole, or ask a lab admin for a new one."
        )
        return
    except LabError as exc:
        st.session_state[_ERROR_KEY] = exc.message
        return
    st.session_state[api_client.TOKEN_KEY] = token
    st.session_state.pop(_ERROR_KEY, None)


def form(page_title: str) -> None:
    """The sign-in form, shown instead of the page `page_title` (its link kept as it is)."""
    url = api_client.connection()[0]
    st.title("Sign in to FedGen Lab")
    if st.query_params:
        st.markdown(f"You opened a link to **{page_title}**. Sign in once to see it.")
    else:
        st.markdown(f"Sign in once to open **{page_title}**.")
    with st.form("signin_form", enter_to_submit=True, width=560):
        st.text_input(
            "API token",
            key=FORM_TOKEN_KEY,
            type="password",
            placeholder="fgl_…",
            help=f"Checked against the lab server at {url}",
        )
        error = st.session_state.get(_ERROR_KEY)
        if error:
            st.error(error, icon=":material/key_off:")
        st.form_submit_button("Sign in", type="primary", on_click=_submit)
    st.caption(HOW_TO_GET_ONE)
    st.caption(KEPT_WHERE)


def sign_out() -> None:
    """The Sign out button's callback: forget the token in this session and in the browser."""
    ignored = [*token_store.ignored_tokens(), token_store.read_cookie()]
    ignored.append(str(st.session_state.get(api_client.TOKEN_KEY) or ""))
    st.session_state.clear()  # every page's widgets too: the next sign-in starts afresh
    for token in ignored:
        token_store.forget(token)


def sync_cookie() -> None:
    """Make the browser's cookie match this session: the signed-in token, or none.

    Mounted on every script run of a browser-mode dashboard, before the page runs (a page
    may end its run with st.stop()): in the sidebar when signed in, under the sign-in form
    otherwise. It renders nothing. Skipped while the cookie's token could not be checked
    (server down), so it is not lost.
    """
    if st.session_state.get(_KEEP_COOKIE_KEY):
        return
    token_store.sync(str(st.session_state.get(api_client.TOKEN_KEY) or ""))
