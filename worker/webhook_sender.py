"""Each worker process's webhook sender: a daemon thread that POSTs due deliveries.

It never touches a run: events are queued by the transaction that ends a run or a sweep
(api/repository/webhooks.py), and this thread, beside the dispatch loop, sends them on its own
sessions and its own HTTP client, so a slow or dead receiver delays only other deliveries.

One attempt: claim one due delivery (`claim_due`: safe with many workers), POST its JSON with
a 5 s timeout (FEDGEN_WEBHOOK_TIMEOUT_S) and the headers `X-FedGen-Event`, `X-FedGen-Delivery`
(its id) and `X-FedGen-Signature: sha256=<hex HMAC-SHA256 of the raw body under the hook's
secret>`; a 2xx is delivered. Anything else is retried after 2, 4, 8 ... s (FEDGEN_WEBHOOK_
BACKOFF_S, at most FEDGEN_WEBHOOK_BACKOFF_MAX_S) until FEDGEN_WEBHOOK_RETRIES attempts, then
the delivery is failed; each attempt's status code or error is written on the row. A host
FEDGEN_WEBHOOK_ALLOW no longer allows fails at once, unsent. Redirects are not followed.
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

from api.config import Settings
from api.db import session_scope
from api.repository import webhooks as hooks_repo
from api.repository.webhooks import Attempt
from api.webhook_schemas import host_allowed, refusal

log = logging.getLogger(__name__)

USER_AGENT = "FedGen-Lab-Webhooks/1"
MAX_ERROR_CHARS = 500


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


def post(client: httpx.Client, claim: hooks_repo.Claimed, settings: Settings) -> Attempt:
    """POST one claimed delivery; never raises."""
    if not host_allowed(claim.url, settings.webhook_allow):
        return Attempt(False, error=refusal(claim.url, settings.webhook_allow), final=True)
    body = encode(claim.payload)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-FedGen-Event": claim.event,
        "X-FedGen-Delivery": str(claim.id),
        "X-FedGen-Signature": sign(body, claim.secret),
    }
    try:
        resp = client.post(claim.url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        return Attempt(False, error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS])
    if 200 <= resp.status_code < 300:
        return Attempt(True, resp.status_code)
    text = resp.text.strip().replace("\n", " ")[:200]
    return Attempt(False, resp.status_code, f"HTTP {resp.status_code}: {text}"[:MAX_ERROR_CHARS])


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
    """The sender's HTTP client: the delivery timeout, no redirects."""
    return httpx.Client(timeout=settings.webhook_timeout_s, follow_redirects=False)


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
