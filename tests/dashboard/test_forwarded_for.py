"""The dashboard's client (`api_client.open_client`, fedgen_lab's LabApi) names the browser in
X-Forwarded-For (httpx MockTransport; no server)."""

from __future__ import annotations

from types import SimpleNamespace

import httpx
import pytest
import streamlit as st

from dashboard import api_client
from dashboard import browser_address as browser_address_module
from fedgen_lab.errors import LabBusy

# Read as GET /me and as an empty list alike (each model ignores the other's fields).
ANY_BODY = {"id": "1", "name": "alice", "is_admin": False, "data": [], "count": 0}


def _recording(seen: list[httpx.Request], body: object = None) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=body if body is not None else ANY_BODY)

    return httpx.MockTransport(handler)


def test_the_browsers_address_goes_as_x_forwarded_for() -> None:
    seen: list[httpx.Request] = []
    with api_client.open_client(
        "http://lab", "tok", transport=_recording(seen), forwarded_for="203.0.113.5"
    ) as c:
        c.me()
        c.list_tokens()
    assert [r.headers.get("x-forwarded-for") for r in seen] == ["203.0.113.5", "203.0.113.5"]


def test_outside_a_streamlit_session_no_address_is_sent() -> None:
    seen: list[httpx.Request] = []
    with api_client.open_client("http://lab", "tok", transport=_recording(seen)) as c:
        c.me()
    assert "x-forwarded-for" not in seen[0].headers


def test_a_sessions_browser_is_named_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a Streamlit session the client sends st.context.ip_address (checked to be an IP)."""
    # Prepare
    monkeypatch.setattr("streamlit.runtime.scriptrunner.get_script_run_ctx", lambda **_: object())
    monkeypatch.setattr(st, "context", SimpleNamespace(ip_address=" 198.51.100.7 "))
    seen: list[httpx.Request] = []
    # Execute
    with api_client.open_client("http://lab", "tok", transport=_recording(seen)) as c:
        c.me()
    bad = SimpleNamespace(ip_address="198.51.100.7\r\nX-Evil: 1")
    monkeypatch.setattr(st, "context", bad)
    # Assert
    assert seen[0].headers["x-forwarded-for"] == "198.51.100.7"
    assert browser_address_module.browser_address() is None


def test_a_page_client_says_a_busy_server_at_once() -> None:
    """A page's client does not retry (the page says so; its refresh asks again) and waits
    at most api_client.TIMEOUT_S for an answer."""
    # Prepare
    seen: list[httpx.Request] = []

    def busy(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            503, json={"detail": "database unavailable"}, headers={"Retry-After": "30"}
        )

    client = api_client.open_client("http://lab", "tok", transport=httpx.MockTransport(busy))
    # Execute
    with pytest.raises(LabBusy, match="database unavailable"):
        client.me()
    # Assert
    assert len(seen) == 1
    assert client.http.client.timeout == httpx.Timeout(api_client.TIMEOUT_S)
