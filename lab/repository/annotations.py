"""Annotations of runs and sweeps: their note and tags, edited after submission, with who
changed them last and when (the database's clock, like every other time the lab records).

The spec keeps what was submitted; these columns are what the lab shows and searches.
"""

from __future__ import annotations

import uuid

from sqlalchemy import ColumnElement, func, or_, update
from sqlalchemy.orm import QueryableAttribute, Session

from lab.db import db_now
from lab.models import Run, Sweep


def tags_csv(tags: list[str]) -> str:
    """The stored form of a tag list: ',a,b,' (a LIKE on ',a,' matches one tag exactly)."""
    return "," + ",".join(t.replace(",", " ") for t in tags) + ","


def tags_of(csv: str | None) -> list[str]:
    """The tag list of a stored ',a,b,' (empty for ',' or nothing)."""
    return [t for t in (csv or "").split(",") if t]


def _values(
    tags: list[str] | None, note: str | None, by: str, session: Session
) -> dict[str, object]:
    values: dict[str, object] = {"annotated_by": by, "annotated_at": db_now(session)}
    if tags is not None:
        values["tags_csv"] = tags_csv(list(dict.fromkeys(tags)))  # each tag once, in order
    if note is not None:
        values["note"] = note
    return values


def annotate_run(
    session: Session, run_id: uuid.UUID, *, tags: list[str] | None, note: str | None, by: str
) -> None:
    """Set a run's tags and/or note (None leaves one as it is), recording who and when."""
    session.execute(update(Run).where(Run.id == run_id).values(**_values(tags, note, by, session)))


def annotate_sweep(
    session: Session, sweep_id: uuid.UUID, *, tags: list[str] | None, note: str | None, by: str
) -> None:
    """Set a sweep's tags and/or note (None leaves one as it is), recording who and when."""
    session.execute(
        update(Sweep).where(Sweep.id == sweep_id).values(**_values(tags, note, by, session))
    )


def matches_text(
    note: QueryableAttribute[str], tags: QueryableAttribute[str], q: str
) -> ColumnElement[bool]:
    """SQL: `q` occurs in the note or the tags, ignoring case (LIKE wildcards in `q` are literal)."""
    needle = q.lower()
    return or_(
        func.lower(note).contains(needle, autoescape=True),
        func.lower(tags).contains(needle, autoescape=True),
    )
