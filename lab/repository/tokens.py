"""API tokens: create one (its value returned once, only the sha256 stored), find the token of a
presented value, list, revoke, and say whether a token still authenticates (not revoked, not
expired). The queries of the token lifecycle (REST, `fedgen-lab tokens`, the event streams)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from lab.models import ApiToken, User, utcnow
from lab.repository.rowcount import rows_matched
from lab.security import hash_token, new_token

# last_used_at is written at most this often per token: not a write on every request.
TOUCH_EVERY = timedelta(minutes=1)
Refusal = Literal["revoked", "expired"]


def create_token(
    session: Session, user_id: uuid.UUID, *, name: str = "", expires_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new token of the user, expiring after `expires_days` (None: never); (row, value)."""
    value = new_token()
    now = utcnow()
    row = ApiToken(
        user_id=user_id,
        token_hash=hash_token(value),
        name=name,
        created_at=now,
        expires_at=None if expires_days is None else now + timedelta(days=expires_days),
    )
    session.add(row)
    session.flush()
    return row, value


def find(session: Session, value: str) -> tuple[ApiToken, User] | None:
    """The token row of a presented value and its user (revoked or expired ones too), or None.

    One indexed lookup by the value's sha256 (unique index on token_hash).
    """
    stmt = (
        select(ApiToken, User)
        .join(User, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == hash_token(value))
    )
    row = session.execute(stmt).first()
    return None if row is None else (row[0], row[1])


def refusal(token: ApiToken, now: datetime | None = None) -> Refusal | None:
    """Why the token no longer authenticates ("revoked", "expired"), or None while it does."""
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= (now or utcnow()):
        return "expired"
    return None


def touch(session: Session, token: ApiToken, now: datetime | None = None) -> bool:
    """Record a use of the token unless one was recorded within TOUCH_EVERY; True if written.

    The UPDATE re-checks the time, so two requests racing at the minute write once.
    """
    now = now or utcnow()
    if token.last_used_at is not None and now - token.last_used_at < TOUCH_EVERY:
        return False
    touched = rows_matched(
        session,
        update(ApiToken)
        .where(
            ApiToken.id == token.id,
            or_(ApiToken.last_used_at.is_(None), ApiToken.last_used_at < now - TOUCH_EVERY),
        )
        .values(last_used_at=now)
        .execution_options(synchronize_session=False),
    )
    set_committed_value(token, "last_used_at", now)  # written above: not dirty again
    return bool(touched)


def get_token(session: Session, token_id: uuid.UUID) -> ApiToken | None:
    """The token row with this id, or None."""
    return session.get(ApiToken, token_id)


def get_with_owner(session: Session, token_id: uuid.UUID) -> tuple[ApiToken, str] | None:
    """The token row with this id and its user's name, or None."""
    row = session.execute(
        select(ApiToken, User.name)
        .join(User, ApiToken.user_id == User.id)
        .where(ApiToken.id == token_id)
    ).first()
    return None if row is None else (row[0], row[1])


def still_valid(session: Session, token_id: uuid.UUID, now: datetime | None = None) -> bool:
    """True while the token exists, is not revoked and has not expired (one primary-key read;
    what an open event stream asks every few seconds)."""
    row = session.execute(
        select(ApiToken.revoked_at, ApiToken.expires_at).where(ApiToken.id == token_id)
    ).first()
    if row is None or row.revoked_at is not None:
        return False
    expires = row.expires_at
    return expires is None or expires > (now or utcnow())


def count_active(session: Session, user_id: uuid.UUID, now: datetime | None = None) -> int:
    """The user's tokens that still authenticate (not revoked, not expired), counted after
    locking the user's row (PostgreSQL), so two POST /tokens of one member count one after the
    other and cannot both pass FEDGEN_MAX_TOKENS_PER_USER."""
    session.execute(select(User.id).where(User.id == user_id).with_for_update())
    now = now or utcnow()
    stmt = select(func.count()).where(
        ApiToken.user_id == user_id,
        ApiToken.revoked_at.is_(None),
        or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now),
    )
    return int(session.scalar(stmt) or 0)


def list_tokens(session: Session, user_id: uuid.UUID | None = None) -> list[tuple[ApiToken, str]]:
    """Tokens (of one user, or everyone's) with their user's name, newest first."""
    stmt = (
        select(ApiToken, User.name)
        .join(User, ApiToken.user_id == User.id)
        .order_by(ApiToken.created_at.desc(), ApiToken.id)
    )
    if user_id is not None:
        stmt = stmt.where(ApiToken.user_id == user_id)
    return [(t, n) for t, n in session.execute(stmt).all()]


def revoke(session: Session, token: ApiToken, now: datetime | None = None) -> bool:
    """Revoke the token (the row is kept); False when it was revoked already."""
    if token.revoked_at is not None:
        return False
    token.revoked_at = now or utcnow()
    session.flush()
    return True


def revoke_all(session: Session, user_id: uuid.UUID) -> list[ApiToken]:
    """Revoke every token of the user not yet revoked; the tokens revoked now."""
    now = utcnow()
    rows = list(
        session.scalars(
            select(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
        )
    )
    for row in rows:
        row.revoked_at = now
    session.flush()
    return rows


def user_by_name(session: Session, name: str) -> User | None:
    """The user with this name, or None."""
    return session.scalar(select(User).where(User.name == name))
