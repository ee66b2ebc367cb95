"""The webhook sender (worker/webhook_sender.py) against issue 28's finding 3: it resolves and
checks the target again before each POST and connects to the checked address (no second
lookup, so DNS rebinding cannot redirect it), keeps the name for Host, SNI and the certificate,
follows no redirect, and writes what happened to the deliveries log, never the receiver's
answer. Receivers are real servers on 127.0.0.1; DNS is faked (tests/support/webhook_net.py)."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from lab import webhook_targets
from lab.config import Settings
from lab.models import Webhook, WebhookDelivery
from lab.repository import webhooks as hooks_repo
from tests.support.factories import create_user
from tests.support.webhook_net import FakeDNS, banner_service, receiver
from worker import webhook_sender

SECRET = "s3cret-for-the-pinning-tests"
NAME = "hooks.lab.test"  # not resolvable by the system: only the fake DNS knows it


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    """A fake resolver in place of the system's."""
    fake = FakeDNS()
    monkeypatch.setattr(webhook_targets, "resolve", fake.resolve)
    return fake


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Names under lab.test and the loopback address 127.0.0.1 allowed; 3 attempts."""
    return settings.model_copy(
        update={"webhook_allow": "*.lab.test,127.0.0.1", "webhook_retries": 3}
    )


def _queue(session: Session, url: str) -> WebhookDelivery:
    """A webhook to `url` (as if registered when it passed) and one test delivery, committed."""
    user, _ = create_user(session)
    hook = hooks_repo.create_webhook(
        session, owner_id=user.id, url=url, events=["run.failed"], secret=SECRET
    )
    delivery = hooks_repo.queue_test(session, hook, user.name)
    session.commit()
    return delivery


def _row(session: Session) -> WebhookDelivery:
    session.expire_all()
    (row,) = session.query(WebhookDelivery).all()
    return row


def test_name_reaches_the_checked_address_with_its_host_header(
    factory: sessionmaker[Session], session: Session, settings: Settings, dns: FakeDNS
) -> None:
    """A name only the fake DNS resolves (to allowed 127.0.0.1) reaches the local receiver: the
    connection went to the checked address, and Host still names the name; one lookup a send."""
    with receiver() as rec:
        # Prepare
        dns.table[NAME] = ["127.0.0.1"]
        _queue(session, f"http://{NAME}:{rec.port}/hook?x=1")
        # Execute
        sent = webhook_sender.send_due(factory, settings)
    # Assert
    assert sent == 1
    (got,) = rec.got
    assert got["headers"]["Host"] == f"{NAME}:{rec.port}"
    assert got["path"] == "/hook?x=1"
    assert got["headers"]["X-FedGen-Event"] == "test"
    row = _row(session)
    assert (row.status, row.last_status_code, row.last_error) == ("delivered", 200, None)
    assert dns.calls == [NAME]


def test_rebinding_to_loopback_is_refused_at_send(
    factory: sessionmaker[Session], session: Session, settings: Settings, dns: FakeDNS
) -> None:
    """Public at registration, 127.0.0.1 at send under FEDGEN_WEBHOOK_ALLOW='*': not sent, the
    delivery fails at once and the log says why."""
    with receiver() as rec:
        # Prepare
        dns.table["evil.example"] = ["93.184.215.14"]
        url = f"http://evil.example:{rec.port}/"
        open_allow = settings.model_copy(update={"webhook_allow": "*"})
        webhook_targets.check_target(url, open_allow.webhook_allow)  # what registration did
        _queue(session, url)
        dns.table["evil.example"] = ["127.0.0.1"]  # the attacker's DNS answers differently now
        # Execute
        webhook_sender.send_due(factory, open_allow)
    # Assert
    assert rec.got == []
    row = _row(session)
    assert (row.status, row.attempts, row.last_status_code) == ("failed", 1, None)
    assert row.last_error == (
        "refused: evil.example resolves to 127.0.0.1, a loopback address; "
        "FEDGEN_WEBHOOK_ALLOW must name it (e.g. 127.0.0.1) to allow it"
    )


def test_name_that_stops_resolving_is_retried(
    factory: sessionmaker[Session], session: Session, settings: Settings, dns: FakeDNS
) -> None:
    """DNS down at send time: the attempt fails but the delivery stays pending for a retry."""
    # Prepare
    _queue(session, f"http://{NAME}/")
    # Execute
    webhook_sender.send_due(factory, settings)
    # Assert
    row = _row(session)
    assert (row.status, row.attempts) == ("pending", 1)
    assert (
        row.last_error == f"host {NAME} does not resolve to an address (Name or service not known)"
    )


def test_the_answer_body_never_reaches_the_log(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """A 500 whose body holds a secret is logged as "HTTP 500"; a redirect is not followed."""
    with receiver() as rec, receiver() as elsewhere:
        # Prepare
        rec.code, rec.body = 500, b"root:x:0:0:TOP-SECRET internal page"
        _queue(session, f"http://127.0.0.1:{rec.port}/")
        # Execute
        webhook_sender.send_due(factory, settings)
        failed = _row(session)
        rec.code, rec.body = 302, b"moved"
        rec.headers = {"Location": f"http://127.0.0.1:{elsewhere.port}/stolen"}
        session.query(WebhookDelivery).delete()
        session.commit()
        _queue(session, f"http://127.0.0.1:{rec.port}/")
        webhook_sender.send_due(factory, settings)
        redirected = _row(session)
    # Assert
    assert (failed.last_status_code, failed.last_error) == (500, "HTTP 500")
    assert (redirected.last_status_code, redirected.last_error) == (302, "HTTP 302")
    assert redirected.status == "pending"
    assert elsewhere.got == []


def test_a_non_http_service_banner_is_not_logged(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """Pointed at a non-HTTP port (a port scan), the log says the answer was unreadable, and
    not what the service wrote."""
    with banner_service(b"SSH-2.0-OpenSSH_9.6 internal-bastion-7\r\n") as port:
        # Prepare
        _queue(session, f"http://127.0.0.1:{port}/")
        # Execute
        webhook_sender.send_due(factory, settings)
    # Assert
    row = _row(session)
    assert row.last_error == "the answer could not be read (RemoteProtocolError)"
    assert row.last_status_code is None


def _self_signed(tmp: Path, name: str) -> tuple[Path, Path]:
    """A certificate for `name` (its own CA) and its key, made by the openssl command."""
    cert, key = tmp / f"{name}.pem", tmp / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"]
        + ["-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls_receiver(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An HTTPS receiver on 127.0.0.1 whose certificate names hooks.lab.test; its port and the
    certificate to trust."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command makes the test certificate")
    cert, key = _self_signed(tmp_path, NAME)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    with receiver(tls=ctx) as rec:
        yield rec.port, cert


def test_https_keeps_the_name_for_sni_and_the_certificate(
    session: Session, settings: Settings, dns: FakeDNS, tls_receiver: tuple[int, Path]
) -> None:
    """Over https the connection goes to 127.0.0.1 yet the certificate is checked against the
    name: delivered when the name is the certificate's, refused when it is not."""
    # Prepare
    port, cert = tls_receiver
    dns.table |= {NAME: ["127.0.0.1"], "other.lab.test": ["127.0.0.1"]}
    trust = ssl.create_default_context(cafile=str(cert))
    good = _queue(session, f"https://{NAME}:{port}/hook")
    hook = session.get(Webhook, good.webhook_id)
    assert hook is not None
    claim = hooks_repo.Claimed(good.id, 1, "test", good.payload, hook.url, SECRET)
    wrong = hooks_repo.Claimed(
        good.id, 1, "test", good.payload, f"https://other.lab.test:{port}/", SECRET
    )
    # Execute
    with httpx.Client(verify=trust, timeout=5) as client:
        ok = webhook_sender.post(client, claim, settings)
        bad = webhook_sender.post(client, wrong, settings)
    # Assert
    assert (ok.delivered, ok.status_code) == (True, 200)
    assert not bad.delivered
    assert bad.error is not None
    assert bad.error.startswith("could not connect to 127.0.0.1 port")
    assert "other.lab.test" in bad.error  # the certificate was checked against the name


def test_a_silent_receiver_times_out_in_words(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """A port that accepts but never answers: the log says it timed out, and after how long."""
    with socket.socket() as silent:
        # Prepare: listening, never accepting; the kernel completes the handshake anyway.
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        _queue(session, f"http://127.0.0.1:{silent.getsockname()[1]}/")
        quick = settings.model_copy(update={"webhook_timeout_s": 0.5})
        # Execute
        webhook_sender.send_due(factory, quick)
    # Assert
    row = _row(session)
    assert (row.status, row.last_status_code) == ("pending", None)
    assert row.last_error == "timed out after 0.5 s waiting for the answer"
