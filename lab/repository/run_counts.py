"""How many runs a filter matches, per status, without scanning a lab of 100,000 runs.

Each status is counted with a cap (`COUNT_CAP`): a count that stops at COUNT_CAP + 1 matching
rows is exact below it and cheap above it (the (status, created_at) index gives the rows of
one status). Above the cap, Postgres answers its planner's estimate of the rows (EXPLAIN, at
least COUNT_CAP + 1), flagged not exact. SQLite, the one-host lab, counts exactly in one
GROUP BY.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, func, literal, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.elements import ClauseElement

from fedgen.status import RUN_STATUSES
from lab.models import Run, User

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


def _matching(conds: list[ColumnElement[bool]]) -> Select[Any]:
    # The owner filter names users.name: the join is always there (one row per run).
    return select(literal(1)).select_from(Run).join(User, User.id == Run.owner_id).where(*conds)


def plan(session: Session, statement: Select[Any]) -> dict[str, Any]:
    """The Postgres planner's plan of `statement` (EXPLAIN's JSON: its "Plan")."""
    explained = session.execute(_Explain(statement)).scalar_one()
    return explained[0]["Plan"]  # type: ignore[no-any-return]


def estimate(session: Session, conds: list[ColumnElement[bool]]) -> int:
    """The Postgres planner's estimate of the runs matching `conds`."""
    return int(plan(session, _matching(conds))["Plan Rows"])


def status_counts(session: Session, conds: list[ColumnElement[bool]]) -> StatusCounts:
    """Runs per status (every status, zeros included) matching `conds`, which must not filter
    on the status itself."""
    if session.get_bind().dialect.name != "postgresql":
        stmt = (
            select(Run.status, func.count())
            .join(User, User.id == Run.owner_id)
            .where(*conds)
            .group_by(Run.status)
        )
        found = {str(s): int(n) for s, n in session.execute(stmt)}
        return StatusCounts({s: found.get(s, 0) for s in RUN_STATUSES})
    counts: dict[str, int] = {}
    estimated: set[str] = set()
    for status in RUN_STATUSES:
        where = [*conds, Run.status == status]
        capped = _matching(where).limit(COUNT_CAP + 1).subquery()
        n = int(session.scalar(select(func.count()).select_from(capped)) or 0)
        if n > COUNT_CAP:
            n = max(COUNT_CAP + 1, estimate(session, where))
            estimated.add(status)
        counts[status] = n
    return StatusCounts(counts, frozenset(estimated))
