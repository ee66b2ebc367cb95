"""Webhooks: register, list, get, delete, send a test, read the deliveries log.

A webhook belongs to its owner; the owner or an admin may read, test or delete it, and an
admin lists everyone's. Events are queued when runs and sweeps end and sent by the workers
(worker/webhook_sender.py); FEDGEN_WEBHOOK_ALLOW says which names and addresses may be targets
(lab/webhook_targets.py: checked here, resolving the name, and again before each send).
Creating and deleting a webhook are written to the audit log; tests are counted against
FEDGEN_WEBHOOK_TEST_RATE.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response, status

from api.deps import (
    ActorDep,
    SessionDep,
    SettingsDep,
    UserDep,
    check_page_size,
    owned_or_404,
    parse_uuid,
)
from api.errors import FieldErrors
from api.limits import Limits
from lab.models import User, Webhook
from lab.repository import audit
from lab.repository import webhooks as hooks_repo
from lab.webhook_targets import TargetRefused, check_target
from vocab.schemas.errors import AUTHED, BODY, error_responses
from vocab.schemas.webhooks import (
    MAX_WEBHOOKS_PER_USER,
    DeliveriesPublic,
    DeliveryPublic,
    WebhookCreate,
    WebhookPublic,
    WebhooksPublic,
)

router = APIRouter(prefix="/webhooks", tags=["webhooks"])
OWNER_ONLY = error_responses(*AUTHED, 403, 404)
Limit = Annotated[int, Query(ge=1, description="at most FEDGEN_MAX_PAGE_SIZE")]
MEMBER_DELIVERY_ERROR = "not delivered: the receiver could not be reached or did not accept it"
Offset = Annotated[int, Query(ge=0, le=2**31 - 1)]


def _public(hook: Webhook, owner: str) -> WebhookPublic:
    return WebhookPublic(
        id=str(hook.id),
        owner=owner,
        url=hook.url,
        events=list(hook.events or []),
        secret=hook.secret,
        active=hook.active,
        created_at=hook.created_at,
    )


def load_own_webhook(webhook_id: str, session: SessionDep, user: UserDep) -> tuple[Webhook, str]:
    """The webhook of the path and its owner's name; 404, or 403 unless owner or admin."""
    found = hooks_repo.get_webhook(session, parse_uuid(webhook_id, "webhook"))
    return owned_or_404(found, user, "webhook", webhook_id)


OwnWebhookDep = Annotated[tuple[Webhook, str], Depends(load_own_webhook)]


@router.post(
    "", status_code=status.HTTP_201_CREATED, responses=error_responses(*AUTHED, *BODY, 409)
)
def create_webhook(
    body: WebhookCreate, session: SessionDep, settings: SettingsDep, user: UserDep, actor: ActorDep
) -> WebhookPublic:
    """Register a webhook for some events; the answer holds its signing secret. Its host must
    resolve, and to public addresses or ones FEDGEN_WEBHOOK_ALLOW names. A member's 422 says
    which kind of refusal it is, never what the name resolves to (an admin's says)."""
    try:
        target = check_target(body.url, settings.webhook_allow)
    except TargetRefused as exc:
        raise FieldErrors([("url", exc.told(bool(user.is_admin)))]) from None
    if hooks_repo.count_of_owner(session, user.id) >= MAX_WEBHOOKS_PER_USER:
        # The body is fine; the user's webhooks are at the limit (a state: 409, not 422).
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"you have {MAX_WEBHOOKS_PER_USER} webhooks, the most one user may have; "
            "delete one first",
        )
    hook = hooks_repo.create_webhook(
        session,
        owner_id=user.id,
        url=body.url,
        events=list(body.events),
        secret=body.secret or hooks_repo.new_secret(),
    )
    audit.record(
        session,
        actor,
        "webhook.create",
        "webhook",
        hook.id,
        url=body.url,
        address=str(target.address),
        events=list(body.events),
    )
    return _public(hook, user.name)


def _owner_filter(user: User) -> uuid.UUID | None:
    return None if user.is_admin else user.id


@router.get("", responses=error_responses(*AUTHED, 422))
def list_webhooks(
    session: SessionDep, settings: SettingsDep, user: UserDep, limit: Limit = 50, offset: Offset = 0
) -> WebhooksPublic:
    """Your webhooks, newest first (an admin's list has everyone's)."""
    check_page_size(limit, settings)
    rows, count = hooks_repo.list_webhooks(session, _owner_filter(user), limit, offset)
    return WebhooksPublic(data=[_public(h, o) for h, o in rows], count=count)


@router.get("/{webhook_id}", responses=OWNER_ONLY)
def get_webhook(found: OwnWebhookDep) -> WebhookPublic:
    """One webhook, with its secret."""
    return _public(*found)


@router.delete("/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT, responses=OWNER_ONLY)
def delete_webhook(found: OwnWebhookDep, session: SessionDep, actor: ActorDep) -> Response:
    """Delete a webhook and its deliveries (pending ones are not sent)."""
    hook, owner = found
    hooks_repo.delete_webhook(session, hook.id)
    audit.record(session, actor, "webhook.delete", "webhook", hook.id, url=hook.url, owner=owner)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{webhook_id}/test", status_code=status.HTTP_202_ACCEPTED, responses=OWNER_ONLY)
def test_webhook(
    found: OwnWebhookDep, session: SessionDep, user: UserDep, request: Request
) -> DeliveryPublic:
    """Queue a `test` delivery; a worker sends it within seconds (see its deliveries). At most
    FEDGEN_WEBHOOK_TEST_RATE per member (429 with Retry-After beyond)."""
    limits: Limits = request.app.state.limits
    limits.check_webhook_test(str(user.id))
    return DeliveryPublic.model_validate(hooks_repo.queue_test(session, *found))


def _as_member_sees(d: DeliveryPublic) -> DeliveryPublic:
    """A delivery without why its attempts failed: an HTTP status, "connection refused by
    <address> port N", a time-out or a refusal at send would tell a member which internal
    addresses and ports answer. They read one message; admins read the recorded one."""
    if d.last_error is None and (d.last_status_code is None or 200 <= d.last_status_code < 300):
        return d
    return d.model_copy(update={"last_status_code": None, "last_error": MEMBER_DELIVERY_ERROR})


@router.get("/{webhook_id}/deliveries", responses=error_responses(*AUTHED, 403, 404, 422))
def list_deliveries(
    found: OwnWebhookDep,
    session: SessionDep,
    settings: SettingsDep,
    user: UserDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> DeliveriesPublic:
    """The webhook's deliveries, newest first: status, attempts, next attempt, last HTTP status
    or error. A member reads one message for every failed attempt (MEMBER_DELIVERY_ERROR); an
    admin reads what was recorded (the status, the refused address and port, ...)."""
    check_page_size(limit, settings)
    rows, count = hooks_repo.list_deliveries(session, found[0].id, limit, offset)
    data = [DeliveryPublic.model_validate(r) for r in rows]
    if not user.is_admin:
        data = [_as_member_sees(d) for d in data]
    return DeliveriesPublic(data=data, count=count)
