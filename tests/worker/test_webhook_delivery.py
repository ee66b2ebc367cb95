"""Webhook deliveries end to end: runs through execute_run queue events, the worker's sender
POSTs them, signed, to an HTTP receiver this test starts on loopback; a receiver that is down
is retried with back-off and never holds a run back."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.db import db_now
from lab.models import User, Webhook, WebhookDelivery
from lab.repository import webhooks as hooks_repo
from tests.support.factories import create_run, create_sweep_runs, create_user
from tests.support.fakes import FakeRunner
from worker import webhook_sender
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome

SECRET = "s3cret-for-the-test-receiver"


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that records each POST and answers `codes` in turn (then 200)."""

    url: str = ""
    got: list[dict[str, Any]] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A live receiver, stopped after the test."""
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            rec.got.append({"headers": dict(self.headers), "body": body})
            code = rec.codes.pop(0) if rec.codes else 200
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b"ok" if code == 200 else b"busy")
            rec.arrived.set()

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    rec.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield rec
    server.shutdown()
    server.server_close()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Loopback targets allowed; 3 attempts at most."""
    return settings.model_copy(
        update={"webhook_allow": "127.0.0.1", "webhook_retries": 3, "webhook_poll_s": 0.05}
    )


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _hook(session: Session, owner: User, url: str, events: list[str]) -> Webhook:
    hook = hooks_repo.create_webhook(
        session, owner_id=owner.id, url=url, events=events, secret=SECRET
    )
    session.commit()
    return hook


def _rows(session: Session) -> list[WebhookDelivery]:
    session.expire_all()
    return list(session.query(WebhookDelivery).order_by(WebhookDelivery.created_at))


def _verify(got: dict[str, Any]) -> dict[str, Any]:
    """The body of a received POST after checking its signature with the secret."""
    expected = "sha256=" + hmac.new(SECRET.encode(), got["body"], hashlib.sha256).hexdigest()
    assert hmac.compare_digest(got["headers"]["X-FedGen-Signature"], expected)
    body: dict[str, Any] = json.loads(got["body"])
    assert got["headers"]["X-FedGen-Event"] == body["event"]
    assert got["headers"]["X-FedGen-Delivery"] == body["delivery_id"]
    return body


def _make_due(session: Session) -> None:
    """Time passes: every pending delivery is due now (instead of sleeping through back-off)."""
    past = db_now(session) - timedelta(seconds=1)
    session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.status == "pending")
        .values(next_attempt_at=past)
    )
    session.commit()


def test_failing_run_sends_one_signed_run_failed(
    factory: sessionmaker, session: Session, settings: Settings, receiver: Receiver
) -> None:
    """A run that fails in round 1 gives the receiver exactly one signed run.failed, sent by the
    worker's sender thread after the run ended."""
    # Prepare
    user, _ = create_user(session)
    _hook(session, user, receiver.url, ["run.failed", "run.succeeded"])
    run = create_run(session, user, rounds=3)
    # Execute
    out = execute_run(str(run.id), factory, runner=FakeRunner(fail_at=1), settings=settings)
    queued = [(d.event, d.attempts) for d in _rows(session)]
    stop = webhook_sender.start_webhook_sender(factory, settings)
    try:
        assert receiver.arrived.wait(30), "no delivery within 30 s"
    finally:
        stop.set()
    webhook_sender.send_due(factory, settings)  # nothing left to send
    # Assert
    assert out == RunOutcome.FAILED
    assert queued == [("run.failed", 0)]  # queued when the run ended, not yet sent
    assert len(receiver.got) == 1
    body = _verify(receiver.got[0])
    assert body["event"] == "run.failed"
    assert body["run"]["id"] == str(run.id)
    assert body["run"]["error"] == "RuntimeError: simulated failure in round 1"
    # The dashboard's words: the run stored round 0 and failed computing round 1.
    assert " failed in round 1 of " in body["text"]
    assert body["text"].endswith(": RuntimeError: simulated failure in round 1")
    assert receiver.got[0]["headers"]["Content-Type"] == "application/json"
    (row,) = _rows(session)
    assert (row.status, row.attempts, row.last_status_code) == ("delivered", 1, 200)
    assert row.delivered_at is not None


def test_sweep_sends_one_sweep_finished(
    factory: sessionmaker, session: Session, settings: Settings, receiver: Receiver
) -> None:
    """A sweep of two runs gives one sweep.finished, once its second run ends."""
    # Prepare
    user, _ = create_user(session)
    _hook(session, user, receiver.url, ["sweep.finished"])
    sweep_id, runs = create_sweep_runs(session, user, {"seed": [0, 1]})
    # Execute
    execute_run(str(runs[0].id), factory, runner=FakeRunner(), settings=settings)
    after_first = webhook_sender.send_due(factory, settings)
    execute_run(str(runs[1].id), factory, runner=FakeRunner(fail_at=1), settings=settings)
    after_second = webhook_sender.send_due(factory, settings)
    webhook_sender.send_due(factory, settings)
    # Assert
    assert (after_first, after_second) == (0, 1)
    assert len(receiver.got) == 1
    body = _verify(receiver.got[0])
    assert body["event"] == "sweep.finished"
    assert body["sweep"]["id"] == str(sweep_id)
    assert body["sweep"]["status_counts"] == {"failed": 1, "succeeded": 1}


def _attempt(
    factory: sessionmaker, session: Session, settings: Settings
) -> tuple[datetime, datetime]:
    """One sender pass, bracketed by the database's clock."""
    before = db_now(session)
    session.rollback()
    webhook_sender.send_due(factory, settings)
    after = db_now(session)
    session.rollback()
    return before, after


def test_receiver_down_is_retried_with_backoff_after_the_run_ended(
    factory: sessionmaker, session: Session, settings: Settings
) -> None:
    """A closed port: the run succeeds with its delivery still unsent; each attempt then fails,
    waits 2, then 4 s (next_attempt_at), and the third (FEDGEN_WEBHOOK_RETRIES) fails it."""
    # Prepare
    user, _ = create_user(session)
    _hook(session, user, f"http://127.0.0.1:{_closed_port()}/hook", ["run.succeeded"])
    run = create_run(session, user, rounds=2)
    # Execute
    out = execute_run(str(run.id), factory, runner=FakeRunner(), settings=settings)
    at_end = [(d.status, d.attempts) for d in _rows(session)]
    seen = []
    for _ in range(3):
        before, after = _attempt(factory, session, settings)
        (row,) = _rows(session)
        seen.append((row.status, row.attempts, row.next_attempt_at, before, after, row.last_error))
        _make_due(session)
    # Assert
    assert out == RunOutcome.SUCCEEDED
    assert at_end == [("pending", 0)]  # the run ended before any attempt: it did not wait
    for i, wait in enumerate([2, 4]):
        status, attempts, next_at, before, after, error = seen[i]
        assert (status, attempts) == ("pending", i + 1)
        assert before + timedelta(seconds=wait) <= next_at <= after + timedelta(seconds=wait)
        assert (error or "").startswith("connection refused by 127.0.0.1 port")
    status, attempts, next_at, *_, error = seen[2]
    assert (status, attempts, next_at) == ("failed", 3, None)
    assert (error or "").startswith("connection refused by 127.0.0.1 port")


def test_later_success_is_delivered_once(
    factory: sessionmaker, session: Session, settings: Settings, receiver: Receiver
) -> None:
    """A 500 then a 200: two POSTs of the same delivery (same id and signature), delivered once;
    a sender that finds it claimed takes nothing."""
    # Prepare
    user, _ = create_user(session)
    hook = _hook(session, user, receiver.url, ["run.failed"])
    receiver.codes = [500]
    run = create_run(session, user)
    execute_run(str(run.id), factory, runner=FakeRunner(fail_at=0), settings=settings)
    # Execute
    first = webhook_sender.send_due(factory, settings)
    (after_500,) = _rows(session)
    first_try = (after_500.status, after_500.last_status_code, after_500.last_error)
    _make_due(session)
    with factory() as a, factory() as b:
        taken = hooks_repo.claim_due(a, limit=5, hold_s=60)
        a.commit()
        nothing = hooks_repo.claim_due(b, limit=5, hold_s=60)
    _make_due(session)
    webhook_sender.send_due(factory, settings)
    webhook_sender.send_due(factory, settings)
    # Assert
    assert first == 1
    assert first_try == ("pending", 500, "HTTP 500")  # never the answer's body ("busy")
    assert [c.attempt for c in taken] == [2]
    assert nothing == []
    assert len(receiver.got) == 2
    assert receiver.got[0]["body"] == receiver.got[1]["body"]
    assert _verify(receiver.got[1])["delivery_id"] == str(after_500.id)
    (row,) = _rows(session)
    assert (row.status, row.attempts, row.webhook_id) == ("delivered", 3, hook.id)


def test_refused_host_fails_unsent(
    factory: sessionmaker, session: Session, settings: Settings, receiver: Receiver
) -> None:
    """A host FEDGEN_WEBHOOK_ALLOW no longer allows (the admin narrowed it) is not POSTed to."""
    # Prepare
    user, _ = create_user(session)
    hook = _hook(session, user, receiver.url, ["run.failed"])
    with factory() as s:
        delivery = hooks_repo.queue_test(s, hook, "alice")
        s.commit()
    narrowed = settings.model_copy(update={"webhook_allow": "hooks.slack.com"})
    # Execute
    webhook_sender.send_due(factory, narrowed)
    # Assert
    (row,) = _rows(session)
    assert row.id == delivery.id
    assert (row.status, row.attempts) == ("failed", 1)
    assert (row.last_error or "").startswith("refused: host 127.0.0.1 is not allowed by")
    assert receiver.got == []


def test_public_url_makes_the_sent_links_absolute(
    factory: sessionmaker, session: Session, settings: Settings, receiver: Receiver
) -> None:
    """With FEDGEN_PUBLIC_URL the body's link and api are absolute and the chat text carries
    the link (something to click); the stored payload keeps them relative."""
    # Prepare
    settings = settings.model_copy(update={"public_url": "https://lab.example/"})
    user, _ = create_user(session)
    _hook(session, user, receiver.url, ["run.failed"])
    run = create_run(session, user, rounds=3)
    # Execute
    execute_run(str(run.id), factory, runner=FakeRunner(fail_at=1), settings=settings)
    webhook_sender.send_due(factory, settings)
    # Assert
    body = _verify(receiver.got[0])
    assert body["link"] == f"https://lab.example/?page=live&run={run.id}"
    assert body["api"] == f"https://lab.example/api/v1/runs/{run.id}"
    assert body["text"].endswith(f" https://lab.example/?page=live&run={run.id}")
    (row,) = _rows(session)
    assert row.payload["link"] == f"/?page=live&run={run.id}"


def test_a_public_url_must_be_an_http_address() -> None:
    with pytest.raises(ValueError, match="public_url"):
        Settings(public_url="javascript:alert(1)")
