"""FastAPI dependencies: settings, session (commit/rollback), current user, run loader."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Annotated, Protocol, TypeVar

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker

from api.client_address import client_address
from api.errors import FieldErrors
from api.limits import Limits
from api.service import Submitter
from lab.config import Settings
from lab.db import session_scope
from lab.models import ApiToken, Run, Sweep, User
from lab.repository import audit
from lab.repository import runs as runs_repo
from lab.repository import sweeps as sweeps_repo
from lab.repository import tokens as tokens_repo


class _Owned(Protocol):
    owner_id: uuid.UUID


T = TypeVar("T", bound=_Owned)

_bearer = HTTPBearer(auto_error=False, description="API token from `fedgen-lab users create`")


def get_app_settings(request: Request) -> Settings:
    """The settings the app was built with."""
    settings: Settings = request.app.state.settings  # app.state holds anything: typed here
    return settings


def get_session(request: Request) -> Iterator[Session]:
    """A session that commits on success and rolls back on exception (rule 9)."""
    with session_scope(request.app.state.sessionmaker) as session:
        yield session


def get_session_factory(request: Request) -> sessionmaker[Session]:
    """The app's sessionmaker, for a stream that opens a short session per chunk it reads."""
    factory: sessionmaker[Session] = request.app.state.sessionmaker
    return factory


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
SessionFactoryDep = Annotated[sessionmaker[Session], Depends(get_session_factory)]
# Committed when the handler returns, before the response is sent (FastAPI's default scope
# for a `yield` dependency, "request", would commit after it: a client could be told 2xx for a
# write that then failed, or read the old state right after its own write). A streaming
# response (SSE, downloads) outlives its handler: it must not pin the session either.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]

CredsDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def current_user(request: Request, session: SessionDep, creds: CredsDep) -> User:
    """The token's user; 401 without a valid bearer token."""
    return authenticate(request, session, creds)


def authenticate(
    request: Request, session: Session, creds: HTTPAuthorizationCredentials | None
) -> User:
    """The user of a bearer token, or 401 (429 for a failing client over its budget)."""
    return authenticate_token(request, session, creds)[1]


def authenticate_token(
    request: Request, session: Session, creds: HTTPAuthorizationCredentials | None
) -> tuple[ApiToken, User]:
    """The presented bearer token and its user, or 401 when it is missing, unknown, revoked or
    expired. Failures count per (client address, token prefix) and per address (api/limits.py)
    and answer 429 over FEDGEN_AUTH_FAIL_RATE; the token is checked first, so a valid one is
    never refused because of other requests' failures."""
    presented = creds.credentials if creds is not None else ""
    found = tokens_repo.find(session, presented) if presented else None
    why = "invalid token" if presented else "missing bearer token"
    if found is not None:
        token, user = found
        refused = tokens_repo.refusal(token)
        if refused is None:
            if tokens_repo.touch(session, token):
                # At once, not with the request: the row lock is not held while it runs.
                session.commit()
            return token, user
        why = f"token {refused}"  # said only to whoever holds the (once valid) token
    settings: Settings = request.app.state.settings
    limits: Limits = request.app.state.limits
    limits.auth_failed(client_address(request, settings.trusted_proxies), presented)
    raise HTTPException(status.HTTP_401_UNAUTHORIZED, why, {"WWW-Authenticate": "Bearer"})


UserDep = Annotated[User, Depends(current_user)]


def current_actor(request: Request, user: UserDep, settings: SettingsDep) -> audit.Actor:
    """The token's user and the client's address (FEDGEN_TRUSTED_PROXIES), for the audit log."""
    return audit.Actor.of(user, client_address(request, settings.trusted_proxies))


ActorDep = Annotated[audit.Actor, Depends(current_actor)]


def submitting_user(request: Request, user: UserDep) -> User:
    """The token's user, counted against FEDGEN_SUBMIT_RATE (429 when over it)."""
    limits: Limits = request.app.state.limits
    limits.check_submit(str(user.id))
    return user


SubmitUserDep = Annotated[User, Depends(submitting_user)]


def submitter(
    request: Request, session: SessionDep, user: SubmitUserDep, settings: SettingsDep
) -> Submitter:
    """Who submits, in which session, and how the app sends tasks (rate-limited user)."""
    return Submitter(session, user, request.app.state.enqueue, settings)


SubmitterDep = Annotated[Submitter, Depends(submitter)]


def check_page_size(limit: int, settings: Settings) -> None:
    """422 on the `limit` field when a page would be larger than `max_page_size`."""
    if limit > settings.max_page_size:
        raise FieldErrors(
            [("limit", f"{limit} exceeds the page size limit {settings.max_page_size}")]
        )


def parse_uuid(value: str, what: str = "run") -> uuid.UUID:
    """A UUID from a path segment; 404 when it is not one (it cannot name anything)."""
    try:
        return uuid.UUID(value)
    except ValueError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{what} {value!r} not found") from None


def _run_or_404(session: Session, run_id: str) -> Run:
    # A run in the trash is found only through /trash (and its restore): 404 everywhere else.
    run = runs_repo.get_run(session, parse_uuid(run_id), in_trash=False)
    if run is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"run {run_id} not found")
    return run


def load_run(run_id: str, session: SessionDep, _user: UserDep) -> Run:
    """The run of the path (its owner loaded, as `run.owner`), or 404."""
    return _run_or_404(session, run_id)


RunDep = Annotated[Run, Depends(load_run)]


def require_owner(owner_id: uuid.UUID, user: User, what: str) -> None:
    """403 unless `user` owns the thing (`what`: "run", "sweep", ...) or is an admin."""
    if owner_id != user.id and not user.is_admin:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, f"only the {what}'s owner or an admin may do this"
        )


def load_own_run(run: RunDep, user: UserDep) -> Run:
    """The run of the path when the user owns it or is an admin; 403 otherwise."""
    require_owner(run.owner_id, user, "run")
    return run


OwnRunDep = Annotated[Run, Depends(load_own_run)]


def owned_or_404(found: tuple[T, str] | None, user: User, what: str, ident: str) -> tuple[T, str]:
    """`found` (a row and its owner's name) when `user` owns it or is an admin; 404 when the
    lookup found nothing, 403 for anyone else. `what` names the kind in the messages."""
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{what} {ident} not found")
    require_owner(found[0].owner_id, user, what)
    return found


def load_own_sweep(sweep_id: str, session: SessionDep, user: UserDep) -> tuple[Sweep, str]:
    """The sweep of the path and its owner's name (see `owned_or_404`)."""
    found = sweeps_repo.get_sweep(session, parse_uuid(sweep_id, "sweep"))
    return owned_or_404(found, user, "sweep", sweep_id)


OwnSweepDep = Annotated[tuple[Sweep, str], Depends(load_own_sweep)]
