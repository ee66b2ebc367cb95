"""The Alerts page (app_pages/settings.py) through AppTest against the real API: add a webhook,
a refused host's message, send a test, the deliveries table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.lab import Lab
from tests.dashboard.test_pages import open_page, texts


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
    log = at.dataframe[0].value
    assert list(log["event"]) == ["test"]
    assert list(log["status"]) == ["queued"]
    with lab.client() as c:
        for hook in c.get("/webhooks").json()["data"]:
            c.delete(f"/webhooks/{hook['id']}")
