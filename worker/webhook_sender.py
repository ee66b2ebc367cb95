"""Each worker process's webhook sender: a daemon thread that POSTs due deliveries.

It never touches a run: events are queued by the transaction that ends a run or a sweep
(lab/repository/webhooks.py), and this thread, beside the dispatch loop, sends them on its own
sessions and its own HTTP client, so a slow or dead receiver delays only other deliveries.

One attempt: claim one due delivery (`claim_due`: safe with many workers), POST its JSON with
a 5 s timeout (FEDGEN_WEBHOOK_TIMEOUT_S) and the headers `X-FedGen-Event`, `X-FedGen-Delivery`
(its id) and `X-FedGen-Signature: sha256=<hex HMAC-SHA256 of the raw body under the hook's
secret>`; a 2xx is delivered. Anything else is retried after 2, 4, 8 ... s (FEDGEN_WEBHOOK_
BACKOFF_S, at most FEDGEN_WEBHOOK_BACKOFF_MAX_S) until FEDGEN_WEBHOOK_RETRIES attempts, then
the delivery is failed; each attempt's status code or error is written on the row.

Before each POST the URL's host is resolved and checked again (lab/webhook_targets.py): a name
FEDGEN_WEBHOOK_ALLOW no longer allows, or one that now resolves to a non-public address it does
not name, fails at once, unsent ("refused: ..."); a name that does not resolve is retried. The
POST then goes to the checked address itself (the URL's host replaced by it, the original
`Host` header, and for https the original name as SNI and for the certificate check), so no
second DNS lookup can send it elsewhere. Redirects are not followed, connections are not kept
(a kept TLS connection to one address must not carry another name's request), and the answer's
body is never read: the row says "HTTP 500", "connection refused", "timed out after 5 s", never
what the receiver wrote.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
from typing import Any

import httpx
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from lab import webhook_payloads as payloads
from lab.config import Settings
from lab.db import session_scope
from lab.repository import webhooks as hooks_repo
from lab.repository.webhooks import Attempt
from lab.webhook_targets import Target, TargetRefused, check_target

log = logging.getLogger(__name__)

USER_AGENT = "FedGen-Lab-Webhooks/1"
MAX_ERROR_CHARS = 500
MAX_CONNECT_ERROR_CHARS = 200


def encode(payload: dict[str, Any]) -> bytes:
    """The body as sent (and signed): compact UTF-8 JSON."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def sign(body: bytes, secret: str) -> str:
    """The X-FedGen-Signature value of `body`: sha256=<hex HMAC-SHA256 under `secret`>."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def backoff_s(settings: Settings, attempts: int) -> float:
    """The wait after failed attempt number `attempts` (1-based): base, 2 x base, ... capped."""
    return float(
        min(settings.webhook_backoff_s * 2 ** min(attempts - 1, 30), settings.webhook_backoff_max_s)
    )


def pinned_request(
    client: httpx.Client, url: str, target: Target, body: bytes, headers: dict[str, str]
) -> httpx.Request:
    """The POST of `body` to `url`, addressed to the checked `target.address`: the URL's host is
    replaced by the address, `Host` keeps the name and, for https, so do SNI and the certificate
    check (httpcore's `sni_hostname` extension)."""
    original = httpx.URL(url)
    extensions: dict[str, Any] = {}
    if original.scheme == "https":
        extensions["sni_hostname"] = original.raw_host.decode("ascii")
    return client.build_request(
        "POST",
        original.copy_with(host=str(target.address)),
        content=body,
        headers={**headers, "Host": original.netloc.decode("ascii")},
        extensions=extensions,
    )


def describe_error(exc: httpx.HTTPError, request: httpx.Request, settings: Settings) -> str:
    """What went wrong, in words, without anything the receiver sent (a protocol error's text
    can quote the bytes a non-HTTP service answered)."""
    url = request.url
    where = f"{url.host} port {url.port or (443 if url.scheme == 'https' else 80)}"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connect to {where} timed out after {settings.webhook_timeout_s:g} s"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out after {settings.webhook_timeout_s:g} s waiting for the answer"
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        if "refused" in text.lower():
            return f"connection refused by {where}"
        return f"could not connect to {where}: {text[:MAX_CONNECT_ERROR_CHARS]}"
    return f"the answer could not be read ({type(exc).__name__})"


def post(client: httpx.Client, claim: hooks_repo.Claimed, settings: Settings) -> Attempt:
    """Check the target again, then POST one claimed delivery to the checked address; never
    raises."""
    try:
        target = check_target(claim.url, settings.webhook_allow)
    except TargetRefused as exc:
        if not exc.final:  # the name does not resolve now: DNS may come back
            return Attempt(False, error=str(exc)[:MAX_ERROR_CHARS])
        return Attempt(False, error=f"refused: {exc}"[:MAX_ERROR_CHARS], final=True)
    # Links are made absolute here, by the sending host's FEDGEN_PUBLIC_URL: the stored payload
    # (the deliveries log) keeps them relative to wherever the lab is reached from.
    body = encode(payloads.with_public_url(claim.payload, settings.public_url))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-FedGen-Event": claim.event,
        "X-FedGen-Delivery": str(claim.id),
        "X-FedGen-Signature": sign(body, claim.secret),
    }
    request = pinned_request(client, claim.url, target, body, headers)
    try:
        # stream=True and close: the status line is all we need; the body is never read.
        resp = client.send(request, follow_redirects=False, stream=True)
        resp.close()
    except httpx.HTTPError as exc:
        return Attempt(False, error=describe_error(exc, request, settings)[:MAX_ERROR_CHARS])
    if 200 <= resp.status_code < 300:
        return Attempt(True, resp.status_code)
    return Attempt(False, resp.status_code, f"HTTP {resp.status_code}")


def send_one(factory: sessionmaker[Session], settings: Settings, client: httpx.Client) -> bool:
    """Claim one due delivery, send it, record the outcome; False when none was due."""
    # The claim holds the row past the longest send, so no other sender takes it meanwhile.
    with session_scope(factory) as s:
        claimed = hooks_repo.claim_due(s, limit=1, hold_s=settings.webhook_timeout_s * 2 + 30)
    if not claimed:
        return False
    claim = claimed[0]
    out = post(client, claim, settings)
    retry = None
    if not out.delivered and not out.final and claim.attempt < settings.webhook_retries:
        retry = backoff_s(settings, claim.attempt)
    with session_scope(factory) as s:
        hooks_repo.record_attempt(s, claim, out, retry_in_s=retry)
    if out.delivered:
        log.info("webhook %s delivery %s delivered (%s)", claim.event, claim.id, out.status_code)
    else:
        then = f"retry in {retry:.0f} s" if retry is not None else "failed, no retry left"
        log.warning(
            "webhook %s delivery %s attempt %d: %s; %s",
            claim.event,
            claim.id,
            claim.attempt,
            out.error,
            then,
        )
    return True


def send_due(
    factory: sessionmaker[Session],
    settings: Settings,
    client: httpx.Client | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Send every delivery due now, one at a time; returns how many attempts were made."""
    own = client is None
    http = client or make_client(settings)
    sent = 0
    try:
        while not (stop is not None and stop.is_set()) and send_one(factory, settings, http):
            sent += 1
    finally:
        if own:
            http.close()
    return sent


def make_client(settings: Settings) -> httpx.Client:
    """The sender's HTTP client: the delivery timeout, no redirects, no kept connections."""
    return httpx.Client(
        timeout=settings.webhook_timeout_s,
        follow_redirects=False,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def start_webhook_sender(factory: sessionmaker[Session], settings: Settings) -> threading.Event:
    """A daemon thread sending due deliveries every FEDGEN_WEBHOOK_POLL_S; set the event to
    stop it."""
    stop = threading.Event()

    def loop() -> None:
        with make_client(settings) as client:
            while True:
                try:
                    send_due(factory, settings, client, stop)
                except OperationalError as exc:  # database down: the next poll tries again
                    log.warning("webhook sender: database unavailable (%s)", type(exc).__name__)
                except Exception:  # keep sending whatever went wrong with one delivery
                    log.exception("webhook sender pass failed")
                if stop.wait(settings.webhook_poll_s):
                    return

    threading.Thread(target=loop, name="fedgen-webhooks", daemon=True).start()
    return stop
