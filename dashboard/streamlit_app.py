"""FedGen Lab dashboard entrypoint: `streamlit run dashboard/streamlit_app.py`.

Shared sidebar (who am I, on which API: FEDGEN_API_URL only), then `st.navigation` over
app_pages/.
Without FEDGEN_TOKEN each browser signs in first (`dashboard.signin`): the page only runs
once a token the server accepts is known, so a shared link's view is seeded signed in.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st
from streamlit.navigation.page import StreamlitPage

# `streamlit run` puts this file's folder on sys.path, not the repository root.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from dashboard import (  # noqa: E402
    api_client,  # noqa: E402
    loaders,
    signin,
)
from fedgen_lab.errors import LabError  # noqa: E402
from vocab.schemas.users import UserPublic  # noqa: E402

_PAGES = Path(__file__).parent / "app_pages"


def sidebar(user: UserPublic | None) -> None:
    """The identity behind the token, and the API's address as text.

    The dashboard talks to FEDGEN_API_URL only (`http://api:8000` in docker-compose): there is
    no server URL field, so no visitor makes this process send requests, or a token, anywhere
    else. With FEDGEN_TOKEN the token stays in this process (no field holds it, nothing shows
    it). A browser-signed-in member gets a Sign out button. While signed out the sidebar stays
    empty (the sign-in form is the whole page).
    """
    if signin.browser_mode():
        if user is None:
            return
        with st.sidebar:
            st.caption(f"Signed in as **{user.name}** on `{api_client.connection()[0]}`")
            st.button(
                "Sign out",
                key="signout",
                icon=":material/logout:",
                on_click=signin.sign_out,
                help="Forget the token in this browser",
            )
            signin.sync_cookie()
        return
    with st.sidebar:
        url, token = api_client.connection()
        try:
            user = loaders.me(url, token)
            st.caption(f"Signed in as **{user.name}** on `{url}` (FEDGEN_TOKEN)")
        except LabError as exc:
            st.caption(f":red[{exc.message}]")


def page_list() -> list[StreamlitPage]:
    """Every page, the hidden forwarder at the root first."""
    runs = st.Page(_PAGES / "runs.py", title="Runs", icon=":material/table_rows:", url_path="runs")
    pages = [
        runs,
        st.Page(_PAGES / "submit.py", title="Submit", icon=":material/send:", url_path="submit"),
        st.Page(
            _PAGES / "live.py", title="Live run", icon=":material/monitoring:", url_path="live"
        ),
        st.Page(_PAGES / "lab.py", title="Lab", icon=":material/dns:", url_path="lab"),
        st.Page(
            _PAGES / "compare.py",
            title="Compare",
            icon=":material/compare_arrows:",
            url_path="compare",
        ),
        st.Page(_PAGES / "studies.py", title="Paper", icon=":material/science:", url_path="paper"),
        st.Page(
            _PAGES / "paper_tables.py",
            title="Sweep tables",
            icon=":material/description:",
            url_path="tables",
        ),
        st.Page(
            _PAGES / "inspect.py", title="Inspect", icon=":material/biotech:", url_path="inspect"
        ),
        st.Page(_PAGES / "trash.py", title="Trash", icon=":material/delete:", url_path="trash"),
        st.Page(
            _PAGES / "settings.py",
            title="Settings",
            icon=":material/settings:",
            url_path="settings",
        ),
    ]
    by_url_path = {p.url_path: p for p in pages}

    def home() -> None:
        """The root URL forwards to `?page=<url path>` (the other parameters kept), else to
        /runs.

        A shared link of the form `/?page=compare&sweep=<id>` loads from the root, so the
        browser console stays clean: opening `/compare` directly makes Streamlit's frontend
        probe `/compare/_stcore/health` and `/host-config` first, two 404s
        (streamlit/streamlit#7074). Those two cannot be answered instead: the frontend takes
        the first candidate that answers both as the server's base path, so a 200 there (tried
        with Streamlit 1.67, st.App routes) sends its websocket to `/compare/_stcore/stream`,
        which is refused, and nothing loads.
        """
        params = dict(st.query_params)
        target = by_url_path.get(str(params.pop("page", "")), runs)
        st.switch_page(target, query_params=params)

    # Streamlit serves the default page at "/" only, so a default Runs page would make /runs a
    # "Page not found": the hidden default page forwards to the Runs page instead.
    forward = st.Page(home, title="Runs", default=True, visibility="hidden", url_path="home")
    return [forward, *pages]


def tab_title(page_title: str) -> str:
    """The browser tab's title of a page: `Runs · FedGen Lab`."""
    return f"{page_title} · FedGen Lab"


def main() -> None:
    """The shared sidebar and the page picked, or the sign-in form while signed out."""
    # An emoji favicon is drawn in the page; a :material/...: one is fetched from
    # fonts.gstatic.com, which an offline lab cannot reach (a failed request in every load).
    st.set_page_config(page_title="FedGen Lab", page_icon="🧪", layout="wide")
    pages = page_list()
    # With FEDGEN_TOKEN (api_client.connection reads it from the environment, never session state)
    # every visitor is that token's user; without it each browser signs in.
    me = signin.current_user() if signin.browser_mode() else None
    signed_in = me is not None or not signin.browser_mode()
    # Signed out, the page list is hidden too: no page can be reached before signing in.
    page = st.navigation(pages, position="sidebar" if signed_in else "hidden")
    # Each tab says which page it holds ("Runs · FedGen Lab"): a member with five tabs open
    # tells them apart. Set after the page is known (a later call overrides the first).
    shown = page.title if signed_in else "Sign in"
    st.set_page_config(page_title=tab_title(shown))
    sidebar(me)
    if not signed_in and page.url_path != pages[0].url_path:
        # The page does not run (its query string untouched) until a token is accepted; the
        # root's forwarder still runs, so a `/?page=compare&...` link shows the Compare address.
        signin.form(page.title)
        signin.sync_cookie()
    else:
        page.run()


# Streamlit runs the entrypoint as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    main()
