"""No oracles for members, tried from outside on a live API (uvicorn on loopback): one message
per kind of refusal, whatever the path or the name resolves to; the details only for admins.

- `data.root: ~nosuchuser` and `~root` read alike (no telling which accounts exist), and no
  refusal or folder warning shows the server's resolved home or data root;
- a webhook URL whose name resolves to an internal address, does not resolve, or is loopback
  gets one message, never the address; webhook.create's resolved address is not in the
  member's audit rows;
- a member's deliveries read one message whether the receiver refused the connection
  (127.0.0.1 port N) or answered an HTTP error.

DNS is faked (tests/support/webhook_net.py); the deliveries are sent by the workers' sender.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lab import webhook_targets
from tests.support.dashboard_lab import free_port
from tests.support.live_api import LiveApi, live_api
from tests.support.webhook_net import FakeDNS

FOLDER = {"classes": 3, "image_size": 8, "channels": 1}
NOT_PUBLIC = "webhook URL is not allowed: it must resolve to a public address"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    """One live API for the module; each test sets what it needs with `configure`."""
    with live_api(tmp_path_factory.mktemp("live")) as api:
        yield api


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    """A fake resolver in place of the system's (the server runs in this process)."""
    fake = FakeDNS()
    monkeypatch.setattr(webhook_targets, "resolve", fake.resolve)
    return fake


def _validate(c: httpx.Client, live: LiveApi, who: str, data: dict[str, Any]) -> httpx.Response:
    return c.post("/spec/validate", json={"spec": {"data": data}}, headers=live.headers(who))


def _msgs(r: httpx.Response) -> list[tuple[str, str]]:
    assert r.status_code == 422, r.text
    return [(d["field"], d["msg"]) for d in r.json()["detail"]]


def test_data_paths_get_one_message_and_no_server_path(
    live: LiveApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member's refusals of ~nosuchuser, ~root, /etc and a relative `..` folder are the same
    message per field, with neither the roots nor a resolved path; a relative folder that is
    inside but missing warns with the data root as the spec gives it. An admin sees details."""
    # Prepare: the server's default data root, under its "home", is the lab's one root
    home = tmp_path / "srv-home"
    root = home / ".fedgen" / "data"
    root.mkdir(parents=True)
    monkeypatch.setenv("FEDGEN_DATA", str(root))
    live.configure(data_roots="")
    roots = [{"name": "mnist", "root": r} for r in ("~nosuchuser", "~root", "/etc", "~")]
    folders = [
        {"name": "folder", "folder": {"path": p, **FOLDER}}
        for p in ("../../../etc", "~nosuchuser/x", "~root/x", "/etc")
    ]
    with live.client() as c:
        # Execute
        on_root = [_msgs(_validate(c, live, "alice", d)) for d in roots]
        on_folder = [_msgs(_validate(c, live, "alice", d)) for d in folders]
        missing = _validate(c, live, "alice", {"name": "folder", "folder": {"path": "x", **FOLDER}})
        admin = _msgs(_validate(c, live, "admin", roots[0]))
    # Assert
    assert {m for [m] in on_root} == {
        (
            "spec.data.root",
            "spec.data.root: not inside a data root the lab allows (FEDGEN_DATA_ROOTS)",
        )
    }
    assert {m for [m] in on_folder} == {
        (
            "spec.data.folder.path",
            "spec.data.folder.path: not inside a data root the lab allows (FEDGEN_DATA_ROOTS)",
        )
    }
    assert missing.status_code == 200, missing.text
    warned = missing.text
    assert "x does not exist" in warned
    assert str(home) not in warned
    assert str(root) not in warned
    assert "'~nosuchuser' cannot be resolved" in admin[0][1]
    assert str(root) in admin[0][1]


def _register(c: httpx.Client, live: LiveApi, who: str, url: str) -> httpx.Response:
    return c.post(
        "/webhooks", json={"url": url, "events": ["run.failed"]}, headers=live.headers(who)
    )


def test_webhook_urls_get_one_message_and_no_address(live: LiveApi, dns: FakeDNS) -> None:
    """FEDGEN_WEBHOOK_ALLOW='*': a name resolving to 10.0.0.5, a name that does not resolve,
    localhost and the metadata address read alike for a member; an admin is told the address.
    A registered webhook's audit row shows a member no resolved address (an admin: it)."""
    # Prepare
    live.configure(webhook_allow="*,10.9.0.0/16")
    dns.table |= {
        "db.internal.example": ["10.0.0.5"],
        "localhost": ["127.0.0.1"],
        "hooks.internal.example": ["10.9.0.7"],
    }
    urls = [
        "http://db.internal.example/",
        "http://nowhere.internal.example/",
        "http://localhost:5432/",
        "http://169.254.169.254/latest/",
    ]
    with live.client() as c:
        # Execute
        member = [_msgs(_register(c, live, "alice", u)) for u in urls]
        admin = _msgs(_register(c, live, "admin", urls[0]))
        made = _register(c, live, "alice", "http://hooks.internal.example/h")
        hook = made.json()["id"]
        mine = c.get("/audit", params={"subject": hook}, headers=live.headers("alice")).json()
        seen = c.get("/audit", params={"subject": hook}, headers=live.headers("admin")).json()
    # Assert
    assert {m for [m] in member} == {("url", f"url: {NOT_PUBLIC}")}
    assert "10.0.0.5" in admin[0][1]
    assert made.status_code == 201, made.text
    assert "10.9.0.7" not in str(mine["data"])
    assert mine["data"][0]["action"] == "webhook.create"
    assert seen["data"][0]["detail"]["address"] == "10.9.0.7"


def test_deliveries_read_alike_for_a_member(live: LiveApi) -> None:
    """Two webhooks on 127.0.0.1 (allowed by address): one port refuses the connection, the
    other (the API itself) answers an HTTP error. Their failed deliveries read the same for the
    member; the admin reads 'connection refused by 127.0.0.1 port N' and the HTTP status."""
    from worker import webhook_sender

    # Prepare
    live.configure(webhook_allow="127.0.0.1", webhook_retries=1)
    closed = free_port()
    api_port = int(live.url.rsplit(":", 1)[1])
    with live.client() as c:
        hooks = [
            _register(c, live, "alice", f"http://127.0.0.1:{port}/hook").json()["id"]
            for port in (closed, api_port)
        ]
        for hook in hooks:
            r = c.post(f"/webhooks/{hook}/test", headers=live.headers("alice"))
            assert r.status_code == 202, r.text
        # Execute
        webhook_sender.send_due(live.app.state.sessionmaker, live.app.state.settings)
        member = [
            c.get(f"/webhooks/{h}/deliveries", headers=live.headers("alice")).json()["data"][0]
            for h in hooks
        ]
        admin = [
            c.get(f"/webhooks/{h}/deliveries", headers=live.headers("admin")).json()["data"][0]
            for h in hooks
        ]
    # Assert
    assert [d["status"] for d in admin] == ["failed", "failed"]
    assert admin[0]["last_error"] == f"connection refused by 127.0.0.1 port {closed}"
    assert admin[1]["last_status_code"] is not None
    shown = [(d["status"], d["last_status_code"], d["last_error"]) for d in member]
    assert shown[0] == shown[1], shown
    error = shown[0][2]
    assert error
    assert "127.0.0.1" not in error
    assert "refused" not in error
