"""The sign-in gate (dashboard.signin) through streamlit.testing's AppTest, on the real API.

The dashboard process has no FEDGEN_TOKEN here (as in docker-compose). The browser's cookie
is stood in for by patching `token_store.read_cookie` (AppTest has no browser), and what the
cookie writer is told is recorded by patching `token_store.sync`.
"""

from __future__ import annotations

from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dashboard import api_client, token_store
from tests.support.apptest import texts
from tests.support.dashboard_lab import Lab

SIGN_IN = "Sign in to FedGen Lab"
COMPARE_KEYS = ("cmp_sweep", "cmp_metric", "cmp_x", "cmp_selection")  # seeded from the link


class Browser:
    """The browser's cookie as the dashboard sees it, and what the dashboard writes to it."""

    def __init__(self, cookie: str = "") -> None:
        self.cookie = cookie
        self.synced: list[str] = []


@pytest.fixture
def browser(lab: Lab, seeded: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Browser:
    """A dashboard without FEDGEN_TOKEN on the seeded lab, and a browser without a cookie."""
    monkeypatch.setenv("FEDGEN_API_URL", lab.url)
    monkeypatch.delenv("FEDGEN_TOKEN", raising=False)
    st.cache_data.clear()
    seen = Browser()
    monkeypatch.setattr(token_store, "read_cookie", lambda: seen.cookie)
    monkeypatch.setattr(token_store, "sync", lambda token: seen.synced.append(token))
    return seen


def open_link(app_path: str, page: str, query: dict[str, str]) -> AppTest:
    """Open `page` as a shared link with `query` in a new session."""
    at = AppTest.from_file(app_path, default_timeout=30)
    at.query_params.update(query)
    at.run()
    at.switch_page(page)
    at.query_params.update(query)  # switch_page starts from the page's bare address
    return at.run()


def sign_in(at: AppTest, token: str) -> AppTest:
    at.text_input(key="signin_token").set_value(token)
    return at.button[0].click().run()


def test_a_link_without_a_token_shows_only_the_form(
    app_path: str, browser: Browser, seeded: dict[str, Any]
) -> None:
    """No token anywhere: the form, no error, the page not run, its query string untouched."""
    query = {"sweep": seeded["sweep_id"], "metric": "test_loss"}
    # Execute
    at = open_link(app_path, "app_pages/compare.py", query)
    # Assert
    assert not at.exception
    assert [t.value for t in at.title] == [SIGN_IN]
    assert "You opened a link to **Compare**" in texts(at)
    assert "fedgen-lab users create" in texts(at)
    assert list(at.error) == []
    assert [k for k in COMPARE_KEYS if k in at.session_state] == []
    assert at.query_params == query
    assert list(at.sidebar.button) == []  # no Sign out, no page list to wander to


def test_a_wrong_token_is_refused_on_the_form(
    app_path: str, browser: Browser, seeded: dict[str, Any]
) -> None:
    """GET /me refuses the token: the form says so and nothing is kept."""
    at = open_link(app_path, "app_pages/compare.py", {"sweep": seeded["sweep_id"]})
    # Execute
    sign_in(at, "fgl_not-a-real-token")
    # Assert
    assert not at.exception
    assert [t.value for t in at.title] == [SIGN_IN]
    assert [e.value for e in at.error] == [
        "That token was not accepted by the lab server (invalid token). Check that it was "
        "copied whole, or ask a lab admin for a new one."
    ]
    assert api_client.TOKEN_KEY not in at.session_state
    assert browser.synced[-1] == ""  # nothing written to the cookie


def test_signing_in_shows_the_linked_view(
    app_path: str, browser: Browser, lab: Lab, seeded: dict[str, Any]
) -> None:
    """The accepted token runs the page seeded from the link, and goes to the cookie."""
    query = {"sweep": seeded["sweep_id"], "metric": "test_loss", "x": "wall-clock"}
    at = open_link(app_path, "app_pages/compare.py", query)
    # Execute
    sign_in(at, f"  {lab.token}\n")  # pasted with stray whitespace
    # Assert
    assert not at.exception
    assert [t.value for t in at.title] == ["Compare"]
    assert (at.session_state["cmp_sweep"], at.session_state["cmp_metric"]) == (
        seeded["sweep_id"],
        "test_loss",
    )
    assert at.session_state["cmp_x"] == "wall-clock"
    assert at.query_params == query
    assert "Signed in as **alice**" in texts(at)
    assert browser.synced[-1] == lab.token
    assert "signin_token" not in at.session_state or at.session_state["signin_token"] == ""


def test_the_cookie_signs_in_on_the_first_run(
    app_path: str, browser: Browser, lab: Lab, seeded: dict[str, Any]
) -> None:
    """A reload: the cookie's token is there before the page runs; no form, the view."""
    browser.cookie = lab.token
    # Execute
    at = open_link(app_path, "app_pages/compare.py", {"sweep": seeded["sweep_id"]})
    # Assert
    assert not at.exception
    assert [t.value for t in at.title] == ["Compare"]
    assert at.session_state["cmp_sweep"] == seeded["sweep_id"]
    assert [b.label for b in at.sidebar.button] == ["Sign out"]


def test_a_rejected_cookie_asks_to_sign_in_again(app_path: str, browser: Browser) -> None:
    """A revoked token in the cookie: the form with the reason, and the cookie expired."""
    browser.cookie = "fgl_revoked-long-ago"
    # Execute
    at = open_link(app_path, "app_pages/runs.py", {})
    # Assert
    assert not at.exception
    assert [t.value for t in at.title] == [SIGN_IN]
    assert [e.value for e in at.error] == [
        "The token saved in this browser is no longer accepted by the lab server "
        "(invalid token). Sign in again."
    ]
    assert browser.synced[-1] == ""


def test_sign_out_forgets_the_token(
    app_path: str, browser: Browser, lab: Lab, seeded: dict[str, Any]
) -> None:
    """Sign out: session state cleared, the cookie expired and not read back this session."""
    browser.cookie = lab.token
    at = open_link(app_path, "app_pages/compare.py", {"sweep": seeded["sweep_id"]})
    assert [t.value for t in at.title] == ["Compare"]
    # Execute
    at.sidebar.button[0].click().run()
    at.run()  # one more run: the session's cookie (still sent) must not sign in again
    # Assert
    assert not at.exception
    assert [t.value for t in at.title] == [SIGN_IN]
    assert api_client.TOKEN_KEY not in at.session_state
    assert [k for k in COMPARE_KEYS if k in at.session_state] == []
    assert browser.synced[-1] == ""


def test_a_dashboard_with_its_own_token_has_no_form(
    app_path: str, lab_env: dict[str, Any], lab: Lab
) -> None:
    """FEDGEN_TOKEN set (a laptop, a shared lab's dashboard): no form, no cookie, and the token
    reaches no browser: no field holds it, nothing shows it, and there is no server URL field
    (the dashboard talks to FEDGEN_API_URL only, shown as text)."""
    # Execute
    at = open_link(app_path, "app_pages/compare.py", {"sweep": lab_env["sweep_id"]})
    # Assert
    assert not at.exception
    assert [t.value for t in at.title] == ["Compare"]
    assert list(at.sidebar.text_input) == []
    assert api_client.TOKEN_KEY not in at.session_state
    assert list(at.sidebar.button) == []
    assert f"`{lab.url}`" in at.sidebar.caption[0].value
    assert [w.label for w in at.text_input if "url" in w.label.lower()] == []
    assert lab.token not in texts(at) + "".join(str(c.value) for c in at.sidebar.caption)
    widgets = [*at.text_input, *at.text_area, *at.selectbox, *at.multiselect]
    assert all(lab.token not in str(w.value) for w in widgets)


def _show_auth_errors() -> None:
    from dashboard import api_client
    from fedgen_lab.errors import LabAuthError

    api_client.show_error(LabAuthError("The lab server rejected the token: invalid token", 401))
    api_client.show_error(LabAuthError("The lab server refused this action: admins only", 403))


@pytest.mark.parametrize(
    ("env_token", "fix"),
    [("", "Sign out (in the sidebar) and sign in again"), ("fgl_x", "Check the dashboard's")],
)
def test_a_refused_token_names_the_fix_of_this_dashboard(
    monkeypatch: pytest.MonkeyPatch, env_token: str, fix: str
) -> None:
    """401: sign out and in (browser sign-in) or the token field; 403 is about the right."""
    monkeypatch.setenv("FEDGEN_TOKEN", env_token)
    # Execute
    at = AppTest.from_function(_show_auth_errors).run()
    # Assert
    refused, forbidden = (e.value for e in at.error)
    assert fix in refused
    assert forbidden == "The lab server refused this action: admins only."


def test_a_link_through_the_root_keeps_its_view_for_after_sign_in(
    app_path: str, browser: Browser, seeded: dict[str, Any]
) -> None:
    """`/?page=compare&...` (the demo's links) forwards to Compare, where the form waits."""
    at = AppTest.from_file(app_path, default_timeout=30)
    at.query_params.update({"page": "compare", "sweep": seeded["sweep_id"]})
    # Execute
    at.run()
    # Assert
    assert not at.exception
    assert [t.value for t in at.title] == [SIGN_IN]
    assert "You opened a link to **Compare**" in texts(at)
    assert at.query_params == {"sweep": seeded["sweep_id"]}
