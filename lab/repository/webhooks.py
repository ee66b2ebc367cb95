"""Webhooks and their deliveries: create, read, delete; queue an event once per webhook; the
sender's claim-and-record protocol.

Events are queued in the transaction that ends the run (`enqueue_run_ended`, called where a
run's status becomes terminal), so an event exists exactly when its end state is committed.
Queueing never fails that transaction: it runs in a savepoint and any error other than the
database being unreachable is logged and dropped. A delivery is inserted with ON CONFLICT DO
NOTHING on (webhook, event, subject): two workers ending a sweep's last runs at once queue
`sweep.finished` once.

Sending happens elsewhere (worker/webhook_sender.py): `claim_due` takes due rows (FOR UPDATE
SKIP LOCKED on Postgres, then a conditional UPDATE on the attempt count, so two senders never
take the same attempt) and pushes their next_attempt_at past the send; `record_attempt` writes
the outcome.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from fedgen.studies.registry import study_of_base
from lab import webhook_payloads as payloads
from lab.db import db_now, is_unavailable
from lab.models import Run, Sweep, User, Webhook, WebhookDelivery
from lab.repository.rowcount import rows_matched
from vocab.run_status import TERMINAL, RunStatus
from vocab.webhook_events import SWEEP_EVENTS, TEST_EVENT

log = logging.getLogger(__name__)


def new_secret() -> str:
    """A random signing secret (64 hex characters)."""
    return secrets.token_hex(32)


# -- webhooks --------------------------------------------------------------------------------


def create_webhook(
    session: Session, *, owner_id: uuid.UUID, url: str, events: list[str], secret: str
) -> Webhook:
    """Insert an active webhook (flushed, not committed)."""
    hook = Webhook(owner_id=owner_id, url=url, events=events, secret=secret, active=True)
    session.add(hook)
    session.flush()
    return hook


def count_of_owner(session: Session, owner_id: uuid.UUID) -> int:
    """How many webhooks the user has."""
    return session.scalar(select(func.count()).where(Webhook.owner_id == owner_id)) or 0


def get_webhook(session: Session, hook_id: uuid.UUID) -> tuple[Webhook, str] | None:
    """A webhook and its owner's name, or None."""
    row = session.execute(
        select(Webhook, User.name)
        .join(User, User.id == Webhook.owner_id)
        .where(Webhook.id == hook_id)
    ).first()
    return (row[0], row[1]) if row else None


def list_webhooks(
    session: Session, owner_id: uuid.UUID | None, limit: int, offset: int
) -> tuple[list[tuple[Webhook, str]], int]:
    """A page of webhooks (one owner's, or everyone's for None), newest first, and the count."""
    where = [] if owner_id is None else [Webhook.owner_id == owner_id]
    count = session.scalar(select(func.count()).select_from(Webhook).where(*where)) or 0
    stmt = (
        select(Webhook, User.name)
        .join(User, User.id == Webhook.owner_id)
        .where(*where)
        .order_by(Webhook.created_at.desc(), Webhook.id)
        .limit(limit)
        .offset(offset)
    )
    return [(r[0], r[1]) for r in session.execute(stmt)], count


def delete_webhook(session: Session, hook_id: uuid.UUID) -> None:
    """Delete a webhook and its deliveries."""
    session.execute(delete(WebhookDelivery).where(WebhookDelivery.webhook_id == hook_id))
    session.execute(delete(Webhook).where(Webhook.id == hook_id))


# -- deliveries: queue and read ---------------------------------------------------------------


def queue_delivery(
    session: Session,
    hook_id: uuid.UUID,
    event: str,
    subject: str,
    payload: dict[str, Any],
    now: datetime,
) -> uuid.UUID | None:
    """Queue one pending delivery, due now; None when (hook, event, subject) was queued before."""
    delivery_id = uuid.uuid4()
    values = {
        "id": delivery_id,
        "webhook_id": hook_id,
        "event": event,
        "subject": subject,
        "payload": {**payload, "delivery_id": str(delivery_id)},
        "status": "pending",
        "attempts": 0,
        "next_attempt_at": now,
        "created_at": now,
    }
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    # RETURNING says whether the row went in (rowcount is not reliable here on every driver).
    stmt = (
        insert(WebhookDelivery)
        .values(**values)
        .on_conflict_do_nothing()
        .returning(WebhookDelivery.id)
    )
    return session.execute(stmt).scalar_one_or_none()


def queue_test(session: Session, hook: Webhook, owner: str) -> WebhookDelivery:
    """Queue a `test` delivery to `hook` (its own subject: each test is sent)."""
    now = db_now(session)
    body = payloads.ping_payload(webhook_id=str(hook.id), owner=owner, url=hook.url, time=now)
    delivery_id = queue_delivery(session, hook.id, TEST_EVENT, uuid.uuid4().hex, body, now)
    row = session.get(WebhookDelivery, delivery_id)
    assert row is not None  # a fresh subject cannot conflict
    return row


def list_deliveries(
    session: Session, hook_id: uuid.UUID, limit: int, offset: int
) -> tuple[list[WebhookDelivery], int]:
    """A page of one webhook's deliveries, newest first, and their count."""
    where = WebhookDelivery.webhook_id == hook_id
    count = session.scalar(select(func.count()).select_from(WebhookDelivery).where(where)) or 0
    stmt = (
        select(WebhookDelivery)
        .where(where)
        .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id)
        .limit(limit)
        .offset(offset)
    )
    return list(session.scalars(stmt)), count


# -- events ----------------------------------------------------------------------------------


def _hooks_for(session: Session, owner_id: uuid.UUID, events: Iterable[str]) -> list[Webhook]:
    """The owner's active webhooks subscribed to any of `events` (events is a JSON list)."""
    wanted = set(events)
    hooks = session.scalars(
        select(Webhook).where(Webhook.owner_id == owner_id, Webhook.active.is_(True))
    )
    return [h for h in hooks if wanted & set(h.events or [])]


def _guarded(what: str, subject: uuid.UUID, step: Any) -> int:
    """Run `step()` in the caller's savepoint; an error other than an outage is logged and
    dropped, so queueing an alert never fails the run's end."""
    try:
        return int(step())
    except Exception as exc:
        if is_unavailable(exc):
            raise
        log.exception("could not queue the webhook deliveries of %s %s", what, subject)
        return 0


def enqueue_run_ended(session: Session, run_id: uuid.UUID) -> int:
    """Queue `run.failed` / `run.succeeded` for the run's owner's webhooks, and the sweep's
    end events when this made every run of its sweep terminal; returns how many were queued.

    Call it in the transaction that set the run's terminal status (any terminal status: a
    cancelled run queues no run event but may end its sweep)."""

    def step() -> int:
        with session.begin_nested():
            return _run_ended(session, run_id)

    return _guarded("run", run_id, step)


def enqueue_sweep_if_finished(session: Session, sweep_id: uuid.UUID | None) -> int:
    """Queue the sweep's end events if all its runs are terminal (e.g. after a run of it was
    deleted); returns how many were queued."""
    if sweep_id is None:
        return 0

    def step() -> int:
        with session.begin_nested():
            return _sweep_ended(session, sweep_id)

    return _guarded("sweep", sweep_id, step)


def _run_ended(session: Session, run_id: uuid.UUID) -> int:
    # Columns, not the ORM row: the status was set by an UPDATE the identity map did not see.
    row = session.execute(
        select(
            Run.spec,
            Run.status,
            Run.owner_id,
            Run.sweep_id,
            Run.current_round,
            Run.rounds,
            Run.last_acc,
            Run.best_acc,
            Run.error,
            Run.finished_at,
            User.name,
        )
        .join(User, User.id == Run.owner_id)
        .where(Run.id == run_id)
    ).first()
    if row is None or row.status not in TERMINAL:
        return 0
    queued = 0
    if row.status in (RunStatus.FAILED, RunStatus.SUCCEEDED):
        event = f"run.{row.status}"
        hooks = _hooks_for(session, row.owner_id, [event])
        if hooks:
            now = db_now(session)
            body = payloads.run_payload(
                event=event,
                run_id=str(run_id),
                spec=row.spec,
                status=row.status,
                owner=row.name,
                sweep_id=str(row.sweep_id) if row.sweep_id else None,
                current_round=row.current_round,
                rounds=row.rounds,
                last_acc=row.last_acc,
                best_acc=row.best_acc,
                error=row.error,
                finished_at=row.finished_at or now,
            )
            for hook in hooks:
                queued += (
                    queue_delivery(session, hook.id, event, str(run_id), body, now) is not None
                )
    if row.sweep_id is not None:
        queued += _sweep_ended(session, row.sweep_id)
    return queued


def _sweep_ended(session: Session, sweep_id: uuid.UUID) -> int:
    found = session.execute(
        select(Sweep.name, Sweep.base, Sweep.owner_id, User.name)
        .join(User, User.id == Sweep.owner_id)
        .where(Sweep.id == sweep_id)
    ).first()
    if found is None:
        return 0
    name, base, owner_id, owner = found
    hooks = _hooks_for(session, owner_id, SWEEP_EVENTS)
    if not hooks:
        return 0  # the common case: nobody listens, no lock taken
    # Runs of one sweep ending at once in two transactions would each still see the other
    # running: the sweep's row lock makes the later one count after the earlier commits.
    session.execute(select(Sweep.id).where(Sweep.id == sweep_id).with_for_update())
    by_status = select(Run.status, func.count()).where(Run.sweep_id == sweep_id)
    counts: dict[str, int] = {r[0]: r[1] for r in session.execute(by_status.group_by(Run.status))}
    if not counts or any(s not in TERMINAL for s in counts):
        return 0
    study = study_of_base(base)
    now = db_now(session)
    queued = 0
    for event in SWEEP_EVENTS:
        if event == "study.finished" and study is None:
            continue
        body = payloads.sweep_payload(
            event=event,
            sweep_id=str(sweep_id),
            name=name,
            owner=owner,
            counts=counts,
            study=study,
            time=now,
        )
        for hook in hooks:
            if event in hook.events:
                queued += (
                    queue_delivery(session, hook.id, event, str(sweep_id), body, now) is not None
                )
    return queued


# -- the sender's protocol -------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    """A delivery taken for one attempt (number `attempt`, 1-based) and where it goes."""

    id: uuid.UUID
    attempt: int
    event: str
    payload: dict[str, Any]
    url: str
    secret: str


def claim_due(session: Session, *, limit: int, hold_s: float) -> list[Claimed]:
    """Take up to `limit` due pending deliveries for one attempt each, oldest due first: their
    attempt count goes up and next_attempt_at moves `hold_s` ahead (past the send), so no other
    sender takes them meanwhile, and a sender that dies mid-send leaves them due again then.
    The caller commits before sending."""
    now = db_now(session)
    due = session.execute(
        select(WebhookDelivery.id, WebhookDelivery.attempts)
        .where(WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at <= now)
        .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    taken: list[tuple[uuid.UUID, int]] = []
    for delivery_id, attempts in due:
        stmt = (
            update(WebhookDelivery)
            .where(
                WebhookDelivery.id == delivery_id,
                WebhookDelivery.attempts == attempts,
                WebhookDelivery.status == "pending",
            )
            .values(attempts=attempts + 1, next_attempt_at=now + timedelta(seconds=hold_s))
            .execution_options(synchronize_session=False)
        )
        if rows_matched(session, stmt) == 1:
            taken.append((delivery_id, attempts + 1))
    if not taken:
        return []
    attempt_of = dict(taken)
    rows = session.execute(
        select(
            WebhookDelivery.id,
            WebhookDelivery.event,
            WebhookDelivery.payload,
            Webhook.url,
            Webhook.secret,
        )
        .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
        .where(WebhookDelivery.id.in_(list(attempt_of)))
    )
    return [Claimed(r.id, attempt_of[r.id], r.event, r.payload, r.url, r.secret) for r in rows]


@dataclass(frozen=True)
class Attempt:
    """What one POST of a delivery came to."""

    delivered: bool
    status_code: int | None = None
    error: str | None = None
    final: bool = False  # no retry can help (the host is refused)


def record_attempt(
    session: Session, claim: Claimed, out: Attempt, *, retry_in_s: float | None
) -> bool:
    """Write the outcome of the claim's attempt: delivered, pending again in `retry_in_s`, or
    failed (no retry left); False when the row is gone or another sender took a later attempt."""
    now = db_now(session)
    values: dict[str, Any] = {"last_status_code": out.status_code, "last_error": out.error}
    if out.delivered:
        values |= {"status": "delivered", "delivered_at": now, "next_attempt_at": None}
    elif retry_in_s is None:
        values |= {"status": "failed", "next_attempt_at": None}
    else:
        values |= {"next_attempt_at": now + timedelta(seconds=retry_in_s)}
    stmt = (
        update(WebhookDelivery)
        .where(
            WebhookDelivery.id == claim.id,
            WebhookDelivery.attempts == claim.attempt,
            WebhookDelivery.status == "pending",
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return rows_matched(session, stmt) == 1
