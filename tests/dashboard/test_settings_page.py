"""The Settings page (app_pages/settings.py) through AppTest against the real API: add a
webhook, a refused host's message, send a test, the deliveries table; create a token (its
secret shown once) and revoke it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from tests.support.apptest import open_page, texts
from tests.support.dashboard_lab import Lab


@pytest.fixture
def allow_loopback(lab: Lab) -> Iterator[None]:
    """The lab server takes webhooks to 127.0.0.1 for this test, then its settings again.

    Not monkeypatch.setattr: its undo deletes an attribute of a Starlette State (it finds no
    old value in the instance's __dict__), which took the shared lab's settings away from every
    later test of the session."""
    before = lab.app.state.settings
    lab.app.state.settings = before.model_copy(update={"webhook_allow": "127.0.0.1"})
    yield
    lab.app.state.settings = before


def _add(at: AppTest, url: str) -> AppTest:
    at.text_input(key="alerts_url").set_value(url)
    at.checkbox(key="alerts_ev_sweep.finished").check()
    next(b for b in at.button if b.label == "Add webhook").click()
    return at.run()


def test_add_refuse_and_send_test(
    app_path: str, lab_env: dict[str, Any], allow_loopback: None, lab: Lab
) -> None:
    """A refused host shows the API's reason; an allowed one is listed; a test is queued."""
    # Prepare
    at = open_page(app_path, "app_pages/settings.py")
    # Execute
    refused = texts(_add(at, "https://evil.example/hook"))
    at = _add(at, "http://127.0.0.1:9/alerts")
    hid = next(b.key for b in at.button if b.key and b.key.startswith("alerts_test_"))
    at.button(key=hid).click().run()
    # Assert
    assert not at.exception
    assert "url: host evil.example is not allowed by FEDGEN_WEBHOOK_ALLOW" in refused
    page = texts(at)
    assert "**`http://127.0.0.1:9/alerts`**" in page
    assert "Run failed, Sweep finished" in page
    # The deliveries table (the tokens table comes first on the page).
    log = next(d.value for d in at.dataframe if "event" in d.value.columns)
    assert list(log["event"]) == ["test"]
    assert list(log["status"]) == ["queued"]
    with lab.client() as c:
        for hook in c.get("/webhooks").json()["data"]:
            c.delete(f"/webhooks/{hook['id']}")


def test_create_a_token_see_it_once_and_revoke_it(
    app_path: str, lab_env: dict[str, Any], lab: Lab
) -> None:
    """The form's token is shown once and works; revoked from the page, it answers 401."""
    # Prepare
    at = open_page(app_path, "app_pages/settings.py")
    at.text_input(key="tokens_name").set_value("page-test")
    at.number_input(key="tokens_days").set_value(3)
    # Execute
    next(b for b in at.button if b.label == "Create token").click()
    at = at.run()
    secret = at.code[0].value
    shown = texts(at)
    warned = [w.value for w in at.warning]
    table = next(d.value for d in at.dataframe if "revoked" in d.value.columns)
    with httpx.Client(base_url=lab.url + "/api/v1") as http:
        before = http.get("/me", headers={"Authorization": f"Bearer {secret}"}).status_code
    pick = at.selectbox(key="tokens_pick")
    assert pick.value is None  # nothing picked at first: never the page's own token
    pick.select_index(next(i for i, o in enumerate(pick.options) if o.startswith("page-test (")))
    at = at.run()  # the confirmation under "Revoke…" once a token is picked
    at = at.button(key="tokens_revoke").click().run()
    # Assert
    assert not at.exception
    assert "Settings" in [t.value for t in at.title]
    assert secret.startswith("fgl_")
    assert "It is not shown again: only its hash is stored." in warned
    assert "Token page-test (" in shown
    row = table[table["name"] == "page-test"].iloc[0]
    assert row["state"] == "active"
    assert row["expires"].startswith("in ")
    assert secret not in table.to_string()
    assert before == 200
    after = next(d.value for d in at.dataframe if "revoked" in d.value.columns)
    assert after[after["name"] == "page-test"].iloc[0]["state"] == "revoked"
    with httpx.Client(base_url=lab.url + "/api/v1") as http:
        assert http.get("/me", headers={"Authorization": f"Bearer {secret}"}).status_code == 401
    assert not at.code  # the secret is not shown again
