"""The browser-side token store: a lab member's API token kept in a cookie, never in the URL.

A dashboard started without FEDGEN_TOKEN (the lab's docker-compose) asks each browser for a
token once. The token is then kept in a first-party cookie so that a reload, or a shared link
opened later, needs no second sign-in:

- *read*: `st.context.cookies` holds the cookies the browser sent when the session opened, so
  the token is there on the very first script run after a reload, before any page runs (a
  component's value would only arrive on a rerun, after the page had already run once
  without a token).
- *write* and *clear*: a tiny `st.components.v2` component (Streamlit's built-in component
  API, inline JavaScript, no extra package) sets or expires `document.cookie`
  (SameSite=Strict, path=/, 30 days; Secure when the browser shows the page over https, as it
  does behind a TLS-terminating proxy, and always when FEDGEN_PUBLIC_URL starts with https://,
  so a lab published over https never lets the token travel over plain http).

A session's `st.context.cookies` never changes after the session opened, so a token that was
signed out of (or rejected) in this session is remembered here and not read back.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote

import streamlit as st
from streamlit.components.v2 import component

COOKIE = "fedgen_token"
MAX_AGE_S = 30 * 24 * 3600  # a month: a lab member signs in again after a month away
_IGNORED_KEY = "_token_store_ignored"  # cookie values this session must not use again

# `data` is {"name": cookie, "token": str | null, "max_age": int, "secure": bool}: a string is
# written (only when it differs from what the cookie holds), null expires the cookie. It
# renders nothing.
_JS = """
export default function (component) {
  const data = component.data || {};
  const name = data.name;
  const current = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
  const secure = data.secure || window.location.protocol === "https:" ? "; Secure" : "";
  const attrs = "; path=/; SameSite=Strict" + secure;
  if (typeof data.token === "string" && data.token) {
    const value = encodeURIComponent(data.token);
    if (current !== name + "=" + value) {
      document.cookie = name + "=" + value + "; max-age=" + data.max_age + attrs;
    }
  } else if (current !== undefined) {
    document.cookie = name + "=; max-age=0" + attrs;
  }
}
"""

_cookie_writer = component("fedgen_token_cookie", js=_JS)


def read_cookie() -> str:
    """The token the browser sent in its cookie when this session opened ("" when none)."""
    raw = st.context.cookies.get(COOKIE) or ""
    return unquote(raw).strip()


def stored_token() -> str:
    """The browser's token, unless this session signed out of it or the server rejected it."""
    token = read_cookie()
    if token and token in st.session_state.get(_IGNORED_KEY, ()):
        return ""
    return token


def forget(token: str) -> None:
    """Never use `token` from the cookie again in this session (signed out, or rejected)."""
    if token:
        ignored: list[str] = list(st.session_state.get(_IGNORED_KEY, []))
        st.session_state[_IGNORED_KEY] = [*ignored, token]


def ignored_tokens() -> list[str]:
    """The cookie values this session must not use (kept across a session-state clear)."""
    return list(st.session_state.get(_IGNORED_KEY, []))


def secure() -> bool:
    """True when the lab is published over https (FEDGEN_PUBLIC_URL): the cookie is Secure."""
    return os.getenv("FEDGEN_PUBLIC_URL", "").strip().lower().startswith("https://")


def sync(token: str) -> Any:
    """Make the browser's cookie hold `token` ("" expires it). Mount once per script run."""
    return _cookie_writer(
        key="token_cookie",
        data={"name": COOKIE, "token": token or None, "max_age": MAX_AGE_S, "secure": secure()},
        height=0,
    )
