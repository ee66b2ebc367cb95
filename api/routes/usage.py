"""Who the token is and what their runs store: GET /me (the member's usage, quota and queued
runs with their limits) and GET /usage (every member's, for an admin; the Lab page)."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter

from api.deps import SessionDep, SettingsDep, UserDep
from lab.repository import usage as usage_repo
from vocab.schemas.errors import AUTHED, error_responses
from vocab.schemas.usage import MemberUsage, MePublic, UsageList

router = APIRouter(tags=["users"])


@router.get("/me", responses=error_responses(*AUTHED))
def me(user: UserDep, session: SessionDep, settings: SettingsDep) -> MePublic:
    """The token's user, what their runs store (`usage_bytes`, trashed runs included until
    purged), what their queued and running runs are still estimated to add (`reserved_bytes`),
    their quota, and their queued runs against FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER."""
    found = usage_repo.member_usage(session, user.id, settings.quota_bytes)
    return MePublic.model_validate(
        {**asdict(found), "id": user.id, "max_queued_runs": settings.max_queued_runs_per_member}
    )


@router.get("/usage", responses=error_responses(*AUTHED))
def usage(user: UserDep, session: SessionDep, settings: SettingsDep) -> UsageList:
    """Storage and queued runs per member, largest usage first: every member for an admin,
    the caller alone for a member."""
    if user.is_admin:
        rows = usage_repo.all_usage(session, settings.quota_bytes)
    else:
        rows = [usage_repo.member_usage(session, user.id, settings.quota_bytes)]
    data = [MemberUsage.model_validate(r) for r in rows]
    return UsageList(data=data, count=len(data))
