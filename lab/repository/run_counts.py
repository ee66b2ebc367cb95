"""How many runs a filter matches, per status, without scanning a lab of 100,000 runs.

First one GROUP BY over at most COUNT_CAP + 1 matching runs: when fewer match, every count is
exact and nothing more is read. Past the cap (Postgres), each status but the one most of those
runs had is counted again with the cap, through the (status, created_at) index: one with at
most COUNT_CAP matching runs (queued, running, failed in most labs) is exact, a larger one is
the planner's estimate (EXPLAIN). The most common status is estimated without reading it again:
the planner's estimate of all matching runs less the other statuses' counts (at least
COUNT_CAP + 1). Estimates are flagged as such. SQLite, the one-host lab, counts exactly. The
users table is joined only for the owner filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, func, literal, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.elements import ClauseElement

from lab.models import Run, User
from vocab.run_status import RUN_STATUSES

#: Up to this many matching runs a status is counted exactly; past it, estimated (Postgres).
COUNT_CAP = 5000


@dataclass(frozen=True)
class StatusCounts:
    """Runs per status under the filters; `estimated`: the statuses whose count is an estimate."""

    counts: dict[str, int]
    estimated: frozenset[str] = frozenset()


class _Explain(Executable, ClauseElement):
    """EXPLAIN (FORMAT JSON) of a statement, its parameters bound as the statement's own."""

    inherit_cache = False

    def __init__(self, statement: Select[Any]) -> None:
        self.statement = statement


@compiles(_Explain, "postgresql")
def _explain_pg(element: _Explain, compiler: Any, **kw: Any) -> str:
    return "EXPLAIN (FORMAT JSON) " + str(compiler.process(element.statement, **kw))


def _matching(conds: list[ColumnElement[bool]], by_owner: bool, *cols: Any) -> Select[Any]:
    stmt = select(*(cols or (literal(1),))).select_from(Run)
    if by_owner:
        stmt = stmt.join(User, User.id == Run.owner_id)
    return stmt.where(*conds)


def plan(session: Session, statement: Select[Any]) -> dict[str, Any]:
    """The Postgres planner's plan of `statement` (EXPLAIN's JSON: its "Plan")."""
    explained: list[dict[str, dict[str, Any]]] = session.execute(_Explain(statement)).scalar_one()
    return explained[0]["Plan"]


def estimate(session: Session, conds: list[ColumnElement[bool]], by_owner: bool) -> int:
    """The Postgres planner's estimate of the runs matching `conds`."""
    return int(plan(session, _matching(conds, by_owner))["Plan Rows"])


def status_counts(
    session: Session, conds: list[ColumnElement[bool]], *, by_owner: bool = False
) -> StatusCounts:
    """Runs per status (every status, zeros included) matching `conds`, which must not filter
    on the status itself; `by_owner`: a condition names users.name."""
    exact = session.get_bind().dialect.name != "postgresql"
    some = _matching(conds, by_owner, Run.status)
    if not exact:
        some = some.limit(COUNT_CAP + 1)
    capped = some.subquery()
    found = {
        str(s): int(n)
        for s, n in session.execute(select(capped.c.status, func.count()).group_by(capped.c.status))
    }
    if exact or sum(found.values()) <= COUNT_CAP:
        return StatusCounts({s: found.get(s, 0) for s in RUN_STATUSES})
    # The status most of the first COUNT_CAP + 1 runs had (succeeded, in most labs) is not
    # counted again: it is estimated; counting it would read COUNT_CAP + 1 runs once more.
    dominant = max(found, key=lambda s: found[s])
    counts: dict[str, int] = {}
    estimated: set[str] = {dominant}
    for status in RUN_STATUSES:
        if status == dominant:
            continue
        where = [*conds, Run.status == status]
        one = _matching(where, by_owner).limit(COUNT_CAP + 1).subquery()
        n = int(session.scalar(select(func.count()).select_from(one)) or 0)
        if n > COUNT_CAP:
            n = max(COUNT_CAP + 1, estimate(session, where, by_owner))
            estimated.add(status)
        counts[status] = n
    rest = estimate(session, conds, by_owner) - sum(counts.values())
    counts[dominant] = max(COUNT_CAP + 1, rest)
    return StatusCounts({s: counts[s] for s in RUN_STATUSES}, frozenset(estimated))
