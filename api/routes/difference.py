"""The difference between two groups of runs, with its uncertainty (Welch's t-test)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, status

from api.deps import SessionDep, UserDep
from api.errors import FieldErrors
from fedgen.stats import CurveStatistic
from lab import difference as two_groups
from vocab.schemas.analysis import Difference
from vocab.schemas.errors import AUTHED, error_responses

router = APIRouter(tags=["metrics"])
_WS = r"[ \t\n\r\f\v]*"
_UUID = r"(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32})"
# A side's ids as characters: about 540 run ids, so both sides fit in one URL (MAX_URL_BYTES).
MAX_IDS_CHARS = 20_000
# Comma-separated UUIDs (canonical or 32 hex digits), blanks around them allowed.
_IDS_PATTERN = rf"^{_WS}{_UUID}{_WS}(?:,{_WS}{_UUID}{_WS})*(?:,{_WS})?$"
Ids = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_IDS_CHARS,
        pattern=_IDS_PATTERN,
        description="comma-separated run ids (UUIDs)",
    ),
]


def _ids(name: str, text: str) -> list[uuid.UUID]:
    out: list[uuid.UUID] = []
    bad: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            out.append(uuid.UUID(part))
        except ValueError:
            bad.append(part)
    if bad:
        raise FieldErrors([(name, f"not run ids: {', '.join(repr(b) for b in bad[:5])}")])
    return out


@router.get("/difference", responses=error_responses(*AUTHED, 404, 409, 422))
def difference(
    session: SessionDep,
    _user: UserDep,
    a: Ids,
    b: Ids,
    statistic: Annotated[
        CurveStatistic,
        Query(
            description="per-run accuracy: final (the last round the run's protocol "
            "evaluates: R-1 under before_training), best (highest over those rounds) or top5"
        ),
    ] = "final",
    order: Annotated[
        Literal["given", "better_first"],
        Query(
            description="given: a − b as named; better_first: the side with the higher mean "
            "first, so the difference is not negative (`swapped` says whether a and b traded)"
        ),
    ] = "given",
) -> Difference:
    """Group a − group b: means, diff, 95 % CI (Welch–Satterthwaite), Welch's p, n_a, n_b.

    Each run contributes one value (its final, best or top-5 accuracy under its fidelity
    profile); only succeeded runs count. `round` is the final's round shared by every run
    and `statistic_label` names it ("final @199" when it is not the last round R, as under
    the official before_training protocol). 404 for an id that names no run, 409 for fewer
    than 2 finished runs on a side (the message names the side); runs of one side that
    differ in a setting give a `warnings` entry.
    """
    try:
        found = two_groups.difference(session, _ids("a", a), _ids("b", b), statistic, order)
    except two_groups.DifferenceError as exc:
        code = status.HTTP_404_NOT_FOUND if exc.unknown else status.HTTP_409_CONFLICT
        raise HTTPException(code, str(exc)) from None
    return Difference.model_validate(found)
