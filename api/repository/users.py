"""Users and hashed API tokens."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.models import ApiToken, User
from api.security import hash_token, new_token


def create_user(session: Session, name: str, is_admin: bool = False) -> tuple[User, str]:
    """Create a user (or reuse an existing one by name) and a new token; returns (user, token)."""
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        user = User(name=name, is_admin=is_admin)
        session.add(user)
        session.flush()
    elif is_admin and not user.is_admin:
        user.is_admin = True
    token = new_token()
    session.add(ApiToken(user_id=user.id, token_hash=hash_token(token)))
    session.flush()
    return user, token


def user_by_token(session: Session, token: str) -> User | None:
    """The user holding `token`, or None."""
    stmt = (
        select(User)
        .join(ApiToken, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == hash_token(token))
    )
    return session.scalar(stmt)


def token_by_id(session: Session, token_id: uuid.UUID) -> ApiToken | None:
    """The API token row with this id, or None."""
    return session.get(ApiToken, token_id)


def token_row(session: Session, token: str) -> ApiToken | None:
    """The API token row of a token's value, or None."""
    return session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
