"""GET /runs at scale: cursor pages (every run once, newest first), counts that become
estimates past a cap (`count_exact`), the lab's runs per status under the other filters, and
`where=` answered through the spec's GIN index on Postgres."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from lab.models import Run, User
from lab.repository import run_counts
from lab.repository.run_list import RunFilters, conditions
from lab.repository.spec_filter import parse_where, spec_equals
from tests.support.factories import create_run
from vocab.run_status import RUN_STATUSES

API = "/api/v1"


def _h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _get(client: TestClient, token: str, **params: Any) -> dict[str, Any]:
    r = client.get(f"{API}/runs", params=params, headers=_h(token))
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _runs(session: Session, n: int, **overrides: Any) -> list[Run]:
    alice = session.scalars(select(User).where(User.name == "alice")).one()
    return [create_run(session, alice, seed=i, **overrides) for i in range(n)]


def test_cursor_pages_give_every_run_once_newest_first(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """Runs created at the same instant included: walking `next_cursor` pages of 3 returns
    every run exactly once, in the order of the offset pages; the last page has no cursor."""
    # Prepare: 8 runs, three of them sharing one creation time (ties are ordered by id)
    runs = _runs(session, 8)
    same = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
    tied = [r.id for r in runs[2:5]]
    session.execute(update(Run).where(Run.id.in_(tied)).values(created_at=same))
    session.commit()
    by_offset = [
        r["id"]
        for offset in range(0, 9, 3)
        for r in _get(client, tokens["bob"], limit=3, offset=offset)["data"]
    ]
    # Execute
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = _get(client, tokens["bob"], **params)
        seen += [r["id"] for r in page["data"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert pages < 10, "the cursor does not advance"
    # Assert
    assert len(seen) == len(set(seen)) == 8
    assert seen == by_offset
    assert set(seen) == {str(r.id) for r in runs}
    created = [datetime.fromisoformat(r["created_at"]) for r in _get(client, tokens["bob"])["data"]]
    assert created == sorted(created, reverse=True)


def test_a_cursor_keeps_the_filters_it_is_used_with(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """A cursor is a position: the next page under a filter holds only matching runs."""
    # Prepare
    _runs(session, 3, lr=0.05)
    _runs(session, 3)
    first = _get(client, tokens["bob"], limit=2, where="lr=0.05")
    # Execute
    rest = _get(client, tokens["bob"], limit=2, where="lr=0.05", cursor=first["next_cursor"])
    # Assert
    assert first["count"] == 3
    assert len(rest["data"]) == 1
    assert rest["next_cursor"] is None
    assert all(r["spec"]["lr"] == 0.05 for r in first["data"] + rest["data"])


def test_a_bad_cursor_or_a_cursor_with_an_offset_is_422_naming_it(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """Not a cursor (bad characters, wrong length, too long) or with an offset: 422 naming it."""
    # Prepare
    _runs(session, 2)
    cursor = _get(client, tokens["bob"], limit=1)["next_cursor"]
    # Execute
    answers = {
        bad: client.get(f"{API}/runs", params={"cursor": bad}, headers=_h(tokens["bob"]))
        for bad in ("not a cursor!", "AAAA", "A" * 101)
    }
    both = client.get(
        f"{API}/runs", params={"cursor": cursor, "offset": 1}, headers=_h(tokens["bob"])
    )
    # Assert
    for bad, r in answers.items():
        assert r.status_code == 422, bad
        assert "cursor" in r.text, bad
    assert both.status_code == 422
    assert "offset" in both.text


def test_status_counts_are_the_labs_under_the_other_filters(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """Every status is counted (zeros too) under the filters but the status; `count` follows
    the status filter; small counts are exact."""
    # Prepare
    runs = _runs(session, 5, lr=0.05) + _runs(session, 2)
    session.execute(update(Run).where(Run.id == runs[0].id).values(status="failed"))
    session.execute(update(Run).where(Run.id == runs[1].id).values(status="succeeded"))
    session.execute(update(Run).where(Run.id == runs[6].id).values(status="failed"))
    session.commit()
    # Execute
    page = _get(client, tokens["bob"], where="lr=0.05", status="failed", limit=1)
    everything = _get(client, tokens["bob"])
    # Assert
    assert page["status_counts"] == dict.fromkeys(RUN_STATUSES, 0) | {
        "queued": 3,
        "failed": 1,
        "succeeded": 1,
    }
    assert (page["count"], page["count_exact"], page["status_counts_exact"]) == (1, True, True)
    assert everything["count"] == 7
    assert everything["status_counts"]["failed"] == 2


def test_counts_past_the_cap_are_estimates_flagged_on_postgres(
    client: TestClient,
    tokens: dict[str, str],
    session: Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past COUNT_CAP matching runs of a status, Postgres answers its planner's estimate
    (at least the cap + 1) with count_exact false; SQLite counts exactly."""
    # Prepare
    monkeypatch.setattr(run_counts, "COUNT_CAP", 2)
    _runs(session, 4)
    postgres = session.get_bind().dialect.name == "postgresql"
    if postgres:
        session.execute(text("ANALYZE runs"))
        session.commit()
    # Execute
    page = _get(client, tokens["bob"], limit=1)
    few = _get(client, tokens["bob"], status="failed", limit=1)
    # Assert
    if postgres:
        assert page["count_exact"] is False
        assert page["count"] >= 3
        assert page["status_counts"]["queued"] >= 3
    else:
        assert (page["count"], page["count_exact"]) == (4, True)
    assert len(page["data"]) == 1
    assert (few["count"], few["count_exact"]) == (0, True)


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_where_uses_the_spec_index_on_postgres_and_finds_what_a_scan_finds(
    session: Session,
) -> None:
    """The plan of a `where=` filter reads ix_runs_spec_search (sequential scans off, as a
    large table would choose), and what it finds is what comparing the specs in Python finds."""
    # Prepare
    _make_alice(session)
    runs = _runs(session, 6, partition={"alpha": 0.5}) + _runs(session, 3)
    session.execute(text("ANALYZE runs"))
    clauses, problems = parse_where(["partition.alpha=0.5", "seed=2"])
    assert problems == []
    # The clauses alone: with them only, the planner has no other index to pick.
    stmt = select(Run.id).where(*(spec_equals(w, "postgresql") for w in clauses))
    listed = select(Run.id).where(*conditions(session, RunFilters(where=tuple(clauses))))
    # Execute
    session.execute(text("SET LOCAL enable_seqscan = off"))
    chosen = json.dumps(run_counts.plan(session, stmt))
    found = set(session.scalars(stmt))
    # Assert
    assert "ix_runs_spec_search" in chosen
    expected = {r.id for r in runs if r.spec["partition"]["alpha"] == 0.5 and r.spec["seed"] == 2}
    assert found == expected == set(session.scalars(listed))
    assert len(found) == 1


def _make_alice(session: Session) -> None:
    from tests.support.factories import create_user

    create_user(session, "alice")
