"""GET /runs: the runs outside the trash, newest first, filtered, a page at a time.

Newest first is (created_at descending, id ascending among runs created at the same instant).
A page is asked for by `offset` or by `cursor`: the opaque position after the last run of the
previous page (`RunPage.next_cursor`). A cursor page starts where the index says, so the
10,000th page costs what the first does; an offset page reads and skips every run before it.
The counts are those of lab.repository.run_counts (exact up to a cap, then estimates).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, and_, func, or_
from sqlalchemy.orm import Session

from lab.models import Run, User
from lab.repository.annotations import matches_text
from lab.repository.run_counts import status_counts
from lab.repository.runs import with_owner
from lab.repository.spec_filter import SpecWhere, spec_equals

#: A cursor is at most this many characters (what `encode_cursor` makes is 56).
MAX_CURSOR_CHARS = 100


@dataclass(frozen=True)
class RunFilters:
    """Filters of GET /runs; None means no filter."""

    status: str | None = None
    algorithm: str | None = None
    dataset: str | None = None
    tag: str | None = None
    owner: str | None = None
    sweep_id: uuid.UUID | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    # Spec field = JSON value, each one must hold (lab.repository.spec_filter).
    where: tuple[SpecWhere, ...] = ()
    q: str | None = None  # in the note or the tags, ignoring case
    # Runs whose id starts with these hex digits (`fedgen export 1a2b3c4d`), as id_range says.
    id_prefix: str | None = None


def id_range(prefix: str) -> tuple[uuid.UUID, uuid.UUID]:
    """The first and last id that start with `prefix` (hex digits, dashes ignored, any case).

    A range on the primary key rather than a text match: Postgres stores a uuid as 16 bytes
    and SQLite as 32 hex characters, and both order the ids as their hex spelling does, so the
    same condition serves both from the primary key's index. ValueError for a non-hex prefix
    or one longer than an id."""
    digits = prefix.replace("-", "").lower()
    if not digits or len(digits) > 32 or any(c not in "0123456789abcdef" for c in digits):
        raise ValueError(f"{prefix!r} is not the start of a run id (hex digits, up to 32)")
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))


@dataclass(frozen=True)
class Cursor:
    """The position after a run in the newest-first order."""

    created_at: datetime
    id: uuid.UUID


@dataclass(frozen=True)
class RunPage:
    """One page of runs, the count under the filters and the lab's runs per status under the
    filters other than the status (`..._exact`: False when a count is an estimate)."""

    runs: list[Run]
    count: int
    count_exact: bool
    status_counts: dict[str, int]
    status_counts_exact: bool
    next_cursor: str | None


def encode_cursor(run: Run) -> str:
    """The cursor after `run`: its creation time (microseconds since the epoch) and id."""
    micros = round(run.created_at.timestamp() * 1_000_000)
    raw = micros.to_bytes(8, "big", signed=True) + run.id.bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> Cursor:
    """The position a cursor names; ValueError when it is not one `encode_cursor` made."""
    if len(text) > MAX_CURSOR_CHARS:
        raise ValueError(f"is {len(text)} characters; at most {MAX_CURSOR_CHARS}")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("is not a cursor from a page's next_cursor") from None
    if len(raw) != 24:
        raise ValueError("is not a cursor from a page's next_cursor")
    micros = int.from_bytes(raw[:8], "big", signed=True)
    try:
        # Whole microseconds as integers: a float of seconds would round some of them away.
        at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)
    except OverflowError:
        raise ValueError("is not a cursor from a page's next_cursor") from None
    return Cursor(at, uuid.UUID(bytes=raw[8:]))


def _like_within(tag: str) -> str:
    """A LIKE pattern (escape `/`) matching `,tag,` anywhere, its wildcards literal."""
    escaped = tag.replace("/", "//").replace("%", "/%").replace("_", "/_")
    return f"%,{escaped},%"


def conditions(
    session: Session, filters: RunFilters, *, with_status: bool = True
) -> list[ColumnElement[bool]]:
    """SQL conditions of the filters (and outside the trash); the status one only if asked."""
    f = filters
    conds: list[ColumnElement[bool]] = [Run.deleted_at.is_(None)]
    if f.status and with_status:
        conds.append(Run.status == f.status)
    if f.algorithm:
        conds.append(Run.algorithm == f.algorithm)
    if f.dataset:
        conds.append(Run.dataset == f.dataset)
    if f.tag:
        conds.append(Run.tags_csv.contains(f",{f.tag},", autoescape=True))
        if f.tag.isascii():
            # Implied by the test above (both sides lowered by the database, letter by
            # letter for ASCII), but Postgres can answer it from the trigram index on
            # lower(tags_csv) (migration 0013) instead of scanning every run.
            conds.append(func.lower(Run.tags_csv).like(func.lower(_like_within(f.tag)), "/"))
    if f.owner:
        conds.append(User.name == f.owner)
    if f.sweep_id:
        conds.append(Run.sweep_id == f.sweep_id)
    if f.id_prefix:
        first, last = id_range(f.id_prefix)
        conds.append(Run.id.between(first, last))
    if f.created_after:
        conds.append(Run.created_at >= f.created_after)
    if f.created_before:
        conds.append(Run.created_at < f.created_before)
    dialect = session.get_bind().dialect.name
    conds.extend(spec_equals(w, dialect) for w in f.where)
    if f.q:
        conds.append(matches_text(Run.note, Run.tags_csv, f.q))
    return conds


def _after(cursor: Cursor) -> ColumnElement[bool]:
    # The first term alone bounds the index range; the second orders ties by id.
    return and_(
        Run.created_at <= cursor.created_at,
        or_(
            Run.created_at < cursor.created_at,
            and_(Run.created_at == cursor.created_at, Run.id > cursor.id),
        ),
    )


def list_runs(
    session: Session,
    filters: RunFilters,
    limit: int,
    *,
    offset: int = 0,
    cursor: Cursor | None = None,
) -> RunPage:
    """One page of runs outside the trash, newest first (after `cursor`, or from `offset`),
    with the counts under the filters."""
    conds = conditions(session, filters)
    page_conds = [*conds, _after(cursor)] if cursor else conds
    stmt = (
        with_owner()
        .where(*page_conds)
        .order_by(Run.created_at.desc(), Run.id)
        .limit(limit)
        .offset(offset)
    )
    runs = list(session.scalars(stmt))
    others = conditions(session, filters, with_status=False)
    counted = status_counts(session, others, by_owner=bool(filters.owner))
    shown = [filters.status] if filters.status else list(counted.counts)
    return RunPage(
        runs=runs,
        count=sum(counted.counts.get(s, 0) for s in shown),
        count_exact=not counted.estimated.intersection(shown),
        status_counts=counted.counts,
        status_counts_exact=not counted.estimated,
        next_cursor=encode_cursor(runs[-1]) if len(runs) == limit else None,
    )
