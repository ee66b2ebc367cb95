"""Users; their API tokens live in lab/repository/tokens.py."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from lab.models import User
from lab.repository import tokens as tokens_repo


def create_user(
    session: Session,
    name: str,
    is_admin: bool = False,
    *,
    token_name: str = "",
    expires_days: int | None = None,
) -> tuple[User, str]:
    """Create a user (or reuse an existing one by name) and a new token; returns (user, token).

    An existing user's other tokens stay valid (`fedgen-lab tokens revoke` ends them).
    """
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        user = User(name=name, is_admin=is_admin)
        session.add(user)
        session.flush()
    elif is_admin and not user.is_admin:
        user.is_admin = True
    _, token = tokens_repo.create_token(
        session, user.id, name=token_name, expires_days=expires_days
    )
    return user, token
