"""GET /timing: ms per user local update (the paper's Table 3), one row per group of finished
runs (lab.timing_table.timing_table)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import SessionDep, UserDep, parse_uuid
from lab import timing_table
from vocab.schemas.analysis import TimingTable
from vocab.schemas.base import NO_NUL
from vocab.schemas.errors import AUTHED, error_responses

router = APIRouter()


@router.get("/timing", tags=["metrics"], responses=error_responses(*AUTHED, 404, 422))
def timing(
    session: SessionDep,
    _user: UserDep,
    sweep_id: str | None = None,
    algorithm: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
) -> TimingTable:
    """ms per user local update (Table 3): one row per group of finished runs, with its setting.

    Runs are grouped by every spec field but the seed, so a row never mixes two settings
    (dataset, model, batch size, T, users per round, device, FedGen's B_G, ...).
    """
    sid = parse_uuid(sweep_id, "sweep") if sweep_id else None
    return TimingTable.model_validate(timing_table.timing_table(session, sid, algorithm))
