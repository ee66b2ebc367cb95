"""The dashboard's client names the browser (X-Forwarded-For) and manages tokens (httpx
MockTransport; no server)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import httpx
import pytest
import streamlit as st

from dashboard import browser_address as browser_address_module
from dashboard.client import LabClient

# Read as GET /me and as an empty list alike (each model ignores the other's fields).
ANY_BODY = {"id": "1", "name": "alice", "is_admin": False, "data": [], "count": 0}


def _recording(seen: list[httpx.Request], body: object = None) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=body if body is not None else ANY_BODY)

    return httpx.MockTransport(handler)


def test_the_browsers_address_goes_as_x_forwarded_for() -> None:
    seen: list[httpx.Request] = []
    with LabClient(
        "http://lab", "tok", transport=_recording(seen), forwarded_for="203.0.113.5"
    ) as c:
        c.me()
        c.list_tokens()
    assert [r.headers.get("x-forwarded-for") for r in seen] == ["203.0.113.5", "203.0.113.5"]


def test_outside_a_streamlit_session_no_address_is_sent() -> None:
    seen: list[httpx.Request] = []
    with LabClient("http://lab", "tok", transport=_recording(seen)) as c:
        c.me()
    assert "x-forwarded-for" not in seen[0].headers


def test_a_sessions_browser_is_named_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a Streamlit session the client sends st.context.ip_address (checked to be an IP)."""
    # Prepare
    monkeypatch.setattr("streamlit.runtime.scriptrunner.get_script_run_ctx", lambda **_: object())
    monkeypatch.setattr(st, "context", SimpleNamespace(ip_address=" 198.51.100.7 "))
    seen: list[httpx.Request] = []
    # Execute
    with LabClient("http://lab", "tok", transport=_recording(seen)) as c:
        c.me()
    bad = SimpleNamespace(ip_address="198.51.100.7\r\nX-Evil: 1")
    monkeypatch.setattr(st, "context", bad)
    # Assert
    assert seen[0].headers["x-forwarded-for"] == "198.51.100.7"
    assert browser_address_module.browser_address() is None


# Read as a token, a created token (with its secret) and an empty list of tokens alike.
TOKEN_BODY = {
    "id": "t1",
    "user": "alice",
    "name": "laptop",
    "created_at": "2026-12-01T11:00:00Z",
    "last_used_at": None,
    "expires_at": None,
    "revoked_at": None,
    "state": "active",
    "token": "fgl_secret",
    "data": [],
    "count": 0,
}


def test_token_calls() -> None:
    """list (GET), create (POST with a name and days when given), revoke (DELETE)."""
    seen: list[httpx.Request] = []
    with LabClient("http://lab", "tok", transport=_recording(seen, TOKEN_BODY)) as c:
        c.list_tokens()
        c.create_token("laptop", 30)
        c.create_token("ci")
        c.revoke_token("t1")
    assert [(r.method, r.url.path) for r in seen] == [
        ("GET", "/api/v1/tokens"),
        ("POST", "/api/v1/tokens"),
        ("POST", "/api/v1/tokens"),
        ("DELETE", "/api/v1/tokens/t1"),
    ]
    assert json.loads(seen[1].content) == {"name": "laptop", "expires_days": 30}
    assert json.loads(seen[2].content) == {"name": "ci"}
