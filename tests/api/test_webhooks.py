"""Webhooks API: register, read, delete (owner or admin), refusals naming the field and the
limit (FEDGEN_WEBHOOK_ALLOW included), and the deliveries log that run and sweep ends fill.
DNS is faked (`fake_dns`): names under lab.example resolve to a public address, others not."""

from __future__ import annotations

import ipaddress
import socket
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from lab import webhook_payloads, webhook_targets
from lab.config import Settings
from lab.models import Run, User, WebhookDelivery
from lab.repository import runs as runs_repo
from lab.webhook_targets import IP, name_allowed, parse_allow
from tests.support.factories import create_run, create_sweep_runs, make_spec
from vocab.schemas.webhooks import MAX_WEBHOOKS_PER_USER

API = "/api/v1"
ALLOW = "127.0.0.1,*.lab.example"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The suite's settings with webhook targets on loopback and under lab.example allowed."""
    return settings.model_copy(update={"webhook_allow": ALLOW})


PUBLIC = "93.184.215.14"


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """No DNS in tests: *.lab.example resolves to a public address; other names do not."""

    def resolve(host: str, port: int) -> list[IP]:
        if host.endswith(".lab.example"):
            return [ipaddress.ip_address(PUBLIC)]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(webhook_targets, "resolve", resolve)


def _hdr(tokens: dict[str, str], who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens[who]}"}


def _hook(client: TestClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    body = {"url": "http://127.0.0.1:9/hook", "events": ["run.failed"], **body}
    r = client.post(f"{API}/webhooks", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()


def _user(session: Session, name: str) -> User:
    user = session.query(User).filter_by(name=name).one()
    return user


def _end(session: Session, run: Run, status: str, error: str | None = None) -> None:
    """Claim the run and end it the way the worker does (runs_repo.finish), committed."""
    assert runs_repo.claim(session, run.id, worker="w", token="t", device="cpu", lease_s=60)
    assert runs_repo.finish(session, run.id, "t", status=status, error=error)
    session.commit()


def _deliveries(client: TestClient, headers: dict[str, str], hook_id: str) -> list[dict]:
    r = client.get(f"{API}/webhooks/{hook_id}/deliveries", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def test_crud_and_owner_or_admin(client: TestClient, tokens: dict[str, str]) -> None:
    """alice's hook: hers and the admin's to read and delete, not bob's (403); a secret is made."""
    # Prepare
    alice, bob, admin = (_hdr(tokens, n) for n in ("alice", "bob", "admin"))
    # Execute
    hook = _hook(client, alice, events=["run.failed", "sweep.finished", "run.failed"])
    # Assert
    assert hook["events"] == ["run.failed", "sweep.finished"]  # a repeat counts once
    assert len(hook["secret"]) == 64
    assert hook["owner"] == "alice"
    assert hook["active"]
    own = client.get(f"{API}/webhooks/{hook['id']}", headers=alice).json()
    assert own["secret"] == hook["secret"]
    assert client.get(f"{API}/webhooks", headers=alice).json()["count"] == 1
    assert client.get(f"{API}/webhooks", headers=bob).json() == {"data": [], "count": 0}
    assert client.get(f"{API}/webhooks", headers=admin).json()["count"] == 1
    for method, path in [
        ("GET", ""),
        ("DELETE", ""),
        ("POST", "/test"),
        ("GET", "/deliveries"),
    ]:
        r = client.request(method, f"{API}/webhooks/{hook['id']}{path}", headers=bob)
        assert r.status_code == 403, (method, path, r.text)
    assert client.get(f"{API}/webhooks/{hook['id']}", headers=admin).status_code == 200
    assert client.delete(f"{API}/webhooks/{hook['id']}", headers=alice).status_code == 204
    assert client.get(f"{API}/webhooks/{hook['id']}", headers=alice).status_code == 404
    assert client.get(f"{API}/webhooks/not-an-id", headers=alice).status_code == 404
    given = _hook(client, alice, secret="s" * 16, url="https://hooks.lab.example/x")
    assert given["secret"] == "s" * 16
    for _ in range(MAX_WEBHOOKS_PER_USER - 1):
        _hook(client, alice)
    full = client.post(
        f"{API}/webhooks", json={"url": "http://127.0.0.1/", "events": ["test"]}, headers=alice
    )
    assert full.status_code == 422  # `test` is not an event to subscribe to
    over = client.post(
        f"{API}/webhooks",
        json={"url": "http://127.0.0.1/", "events": ["run.failed"]},
        headers=alice,
    )
    assert over.status_code == 409
    assert f"you have {MAX_WEBHOOKS_PER_USER} webhooks" in over.json()["detail"]
    assert _hook(client, bob)["owner"] == "bob"  # the limit is per user


BAD_BODIES = [
    ({"url": "ftp://127.0.0.1/x"}, "url", "http:// or https://"),
    ({"url": "http:///nohost"}, "url", "http(s)://host[:port][/path]"),
    ({"url": "http://127.0.0.1:70000/x"}, "url", "Port out of range"),
    ({"url": "http://127.0.0.1/" + "a" * 2000}, "url", "2000"),
    ({"url": "http://evil.example/x"}, "url", "FEDGEN_WEBHOOK_ALLOW"),
    ({"url": "http://lab.example/x"}, "url", "FEDGEN_WEBHOOK_ALLOW"),  # *.x: subdomains only
    ({"events": []}, "events", "at least 1"),
    ({"events": ["run.started"]}, "events", "run.failed"),
    ({"secret": "short"}, "secret", "16"),
    ({"active": False}, "active", "unknown field"),
]


def test_bad_bodies_are_422_naming_the_field(client: TestClient, auth: dict[str, str]) -> None:
    """Each refusal names its field and the limit or rule broken; nothing is stored."""
    for body, field, says in BAD_BODIES:
        # Prepare
        full = {"url": "http://127.0.0.1:9/hook", "events": ["run.failed"], **body}
        # Execute
        r = client.post(f"{API}/webhooks", json=full, headers=auth)
        # Assert
        assert r.status_code == 422, (body, r.text)
        detail = r.json()["detail"]
        assert any(d["field"].startswith(field) and says in d["msg"] for d in detail), detail
    assert client.get(f"{API}/webhooks", headers=auth).json()["count"] == 0


def test_empty_allow_list_refuses_every_host(
    client: TestClient, auth: dict[str, str], settings: Settings
) -> None:
    """With FEDGEN_WEBHOOK_ALLOW unset nothing is a target, and the 422 says how to change it."""
    # Prepare
    client.app.state.settings = settings.model_copy(update={"webhook_allow": ""})  # type: ignore[attr-defined]
    # Execute
    r = client.post(
        f"{API}/webhooks",
        json={"url": "https://hooks.slack.com/services/x", "events": ["run.failed"]},
        headers=auth,
    )
    # Assert
    assert r.status_code == 422
    msg = r.json()["detail"][0]["msg"]
    assert "FEDGEN_WEBHOOK_ALLOW is empty" in msg
    assert name_allowed("hooks.slack.com", parse_allow("HOOKS.slack.com"))
    assert name_allowed("a.b.lab.example", parse_allow(ALLOW))
    assert not name_allowed("127.0.0.2", parse_allow(ALLOW))
    assert name_allowed("anything.example", parse_allow("*"))


def test_run_and_sweep_ends_fill_the_deliveries_log(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """A failed run queues run.failed once (payload and Slack text); a test is queued on demand;
    a hook of other events gets none; another user's runs queue nothing for alice."""
    # Prepare
    alice = _hdr(tokens, "alice")
    failing = _hook(client, alice, events=["run.failed"])
    other = _hook(client, alice, events=["run.succeeded"])
    run = create_run(session, _user(session, "alice"), partition={"alpha": 0.1})
    bobs = create_run(session, _user(session, "bob"))
    # Execute
    _end(session, run, "failed", error="RuntimeError: boom\n\ntraceback...")
    _end(session, bobs, "failed", error="x")
    runs_repo.request_cancel(session, run.id)  # already ended: queues nothing more
    session.commit()
    test = client.post(f"{API}/webhooks/{failing['id']}/test", headers=alice)
    # Assert
    assert test.status_code == 202
    assert test.json()["event"] == "test"
    log = _deliveries(client, alice, failing["id"])
    assert [d["event"] for d in log] == ["test", "run.failed"]  # newest first
    sent = log[1]
    assert sent["status"] == "pending"
    assert sent["attempts"] == 0
    assert sent["subject"] == str(run.id)
    body = sent["payload"]
    assert body["delivery_id"] == sent["id"]
    assert body["run"]["status"] == "failed"
    assert body["run"]["error"] == "RuntimeError: boom"
    assert body["text"] == (
        "FedGen Lab: run FedAvg · Synth · α=0.1 · s0 failed before round 0: RuntimeError: boom"
    )
    assert body["link"] == f"/?page=live&run={run.id}"
    assert _deliveries(client, alice, other["id"]) == []
    page = client.get(f"{API}/webhooks/{failing['id']}/deliveries?limit=1&offset=1", headers=alice)
    assert page.json()["count"] == 2
    assert page.json()["data"][0]["event"] == "run.failed"
    big = client.get(f"{API}/webhooks/{failing['id']}/deliveries?limit=100000", headers=alice)
    assert big.status_code == 422
    assert big.json()["detail"][0]["field"] == "limit"


def test_sweep_finished_once_also_when_cancelled_and_study_finished(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """sweep.finished is queued once, when the last run ends (here by a cancel from the API);
    a study's sweep also queues study.finished."""
    # Prepare
    alice = _hdr(tokens, "alice")
    hook = _hook(client, alice, events=["sweep.finished", "study.finished", "run.succeeded"])
    owner = _user(session, "alice")
    sweep_id, runs = create_sweep_runs(session, owner, {"seed": [0, 1, 2]})
    base = make_spec(tags=["study:table1@v2"])
    study_id, study_runs = create_sweep_runs(session, owner, {"seed": [0]}, base=base)
    # Execute
    _end(session, runs[0], "succeeded")
    _end(session, runs[1], "failed", error="x")
    before = [d["event"] for d in _deliveries(client, alice, hook["id"])]
    r = client.post(f"{API}/runs/{runs[2].id}/cancel", headers=alice)
    assert r.status_code == 202
    assert r.json()["status"] == "cancelled"
    _end(session, study_runs[0], "succeeded")
    # Assert
    assert before == ["run.succeeded"]  # the sweep was not over yet
    log = _deliveries(client, alice, hook["id"])
    events = sorted((d["event"], d["subject"]) for d in log)
    assert events == sorted(
        [
            ("run.succeeded", str(runs[0].id)),
            ("sweep.finished", str(sweep_id)),
            ("run.succeeded", str(study_runs[0].id)),
            ("sweep.finished", str(study_id)),
            ("study.finished", str(study_id)),
        ]
    )
    finished = next(d for d in log if d["subject"] == str(sweep_id))["payload"]
    assert finished["sweep"]["status_counts"] == {"cancelled": 1, "failed": 1, "succeeded": 1}
    assert finished["text"] == "FedGen Lab: sweep t finished: 1 cancelled, 1 failed, 1 succeeded"
    study = next(d for d in log if d["event"] == "study.finished")["payload"]
    assert study["text"].startswith("FedGen Lab: study table1 v2 (sweep t) finished: 1 succeeded")


def test_queueing_error_never_fails_the_run(
    client: TestClient, auth: dict[str, str], session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken payload builder loses the alert, not the run's end state."""
    # Prepare
    _hook(client, auth)
    run = create_run(session, _user(session, "alice"))

    def broken(**_kw: Any) -> dict:
        raise ValueError("payload bug")

    monkeypatch.setattr(webhook_payloads, "run_payload", broken)
    # Execute
    _end(session, run, "failed", error="boom")
    # Assert
    session.expire_all()
    assert session.get(Run, run.id).status == "failed"  # type: ignore[union-attr]
    assert session.query(WebhookDelivery).count() == 0
    assert uuid.UUID(str(run.id))
