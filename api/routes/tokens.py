"""API tokens: a member lists, creates and revokes their own (an admin: anyone's).

A new token's secret is in the answer to its POST only; a revoked token's row is kept (so the
list and the audit log still say which it was) and it answers 401 from its next request on.
Creating and revoking are recorded in the audit log.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, status

from api.deps import (
    ActorDep,
    CredsDep,
    SessionDep,
    SettingsDep,
    UserDep,
    authenticate_token,
    parse_uuid,
    require_owner,
)
from api.errors import FieldErrors
from lab.models import ApiToken
from lab.repository import audit
from lab.repository import tokens as tokens_repo
from lab.security import LifetimeTooLong, lifetime_days
from vocab.schemas.base import NO_NUL
from vocab.schemas.errors import AUTHED, BODY, error_responses
from vocab.schemas.tokens import TokenCreate, TokenCreated, TokenPublic, TokensPublic

router = APIRouter(prefix="/tokens", tags=["tokens"])
TOKENS_RETRY_AFTER_S = 60  # a token over FEDGEN_MAX_TOKENS_PER_USER: revoke one, then retry


def token_public(token: ApiToken, user: str) -> TokenPublic:
    """The listed form of a token row (never its hash)."""
    return TokenPublic(
        id=str(token.id),
        user=user,
        name=token.name,
        created_at=token.created_at,
        last_used_at=token.last_used_at,
        expires_at=token.expires_at,
        revoked_at=token.revoked_at,
        state=tokens_repo.refusal(token) or "active",
    )


@router.get("", responses=error_responses(*AUTHED, 403, 404, 422))
def list_tokens(
    request: Request,
    session: SessionDep,
    creds: CredsDep,
    of_user: Annotated[
        str | None,
        Query(
            alias="user",
            max_length=100,
            pattern=NO_NUL,
            description="An admin's filter: that member's tokens (without it an admin lists "
            "everyone's); a member may name only themself",
        ),
    ] = None,
) -> TokensPublic:
    """Your tokens, newest first (an admin: everyone's, or one member's with `?user=`); the
    one this request was made with is marked `current`."""
    presented, user = authenticate_token(request, session, creds)
    owner_id: uuid.UUID | None = user.id
    if of_user is not None and of_user != user.name:
        if not user.is_admin:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN, "only an admin may list another member's tokens"
            )
        other = tokens_repo.user_by_name(session, of_user)
        if other is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"user {of_user!r} not found")
        owner_id = other.id
    elif of_user is None and user.is_admin:
        owner_id = None
    rows = tokens_repo.list_tokens(session, owner_id)
    data = [
        token_public(t, n).model_copy(update={"current": t.id == presented.id}) for t, n in rows
    ]
    return TokensPublic(data=data, count=len(rows))


@router.post("", status_code=status.HTTP_201_CREATED, responses=error_responses(*AUTHED, *BODY))
def create_token(
    body: TokenCreate, session: SessionDep, settings: SettingsDep, user: UserDep, actor: ActorDep
) -> TokenCreated:
    """A new token of yours; its secret (`token`) is shown in this answer only. At most
    FEDGEN_MAX_TOKENS_PER_USER of your tokens authenticate at once: past it, 429 until you
    revoke one (or one expires)."""
    try:
        days = lifetime_days(body.expires_days, settings.token_max_days)
    except LifetimeTooLong as exc:
        raise FieldErrors([("expires_days", str(exc))]) from None
    active = tokens_repo.count_active(session, user.id)
    if active >= settings.max_tokens_per_user:
        # A count the member holds, like FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER: 429, not a field.
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"you have {active} active API tokens, the most FEDGEN_MAX_TOKENS_PER_USER "
            f"({settings.max_tokens_per_user}) allows; revoke one you no longer use "
            "(DELETE /tokens/{id}, or the dashboard's Settings page) first",
            {"Retry-After": str(TOKENS_RETRY_AFTER_S)},
        )
    token, secret = tokens_repo.create_token(session, user.id, name=body.name, expires_days=days)
    audit.record(
        session,
        actor,
        "token.create",
        "token",
        token.id,
        user=user.name,
        name=token.name,
        expires_at=token.expires_at.isoformat() if token.expires_at else None,
    )
    return TokenCreated(**token_public(token, user.name).model_dump(), token=secret)


@router.delete("/{token_id}", responses=error_responses(*AUTHED, 403, 404))
def revoke_token(token_id: str, session: SessionDep, user: UserDep, actor: ActorDep) -> TokenPublic:
    """Revoke a token of yours (an admin: anyone's); it answers 401 from its next request, and
    its open event streams end. Revoking a revoked token changes nothing."""
    found = tokens_repo.get_with_owner(session, parse_uuid(token_id, "token"))
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"token {token_id} not found")
    token, owner = found
    require_owner(token.user_id, user, "token")
    if tokens_repo.revoke(session, token):
        audit.record(session, actor, "token.revoke", "token", token.id, user=owner, name=token.name)
    return token_public(token, owner)
