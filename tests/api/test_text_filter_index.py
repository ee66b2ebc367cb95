"""tag= stays exact (whole tags, LIKE wildcards literal) with the index-friendly lowered test (migration 0013)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from lab.models import Run
from lab.repository import run_list
from tests.support.factories import create_run, create_user


@pytest.mark.parametrize(
    ("tag", "matches"),
    [
        ("paper", ["paper"]),
        ("a_b", ["a_b"]),
        ("50%", ["50%"]),
        ("x/y", ["x/y"]),
        ("pap", []),
        ("straße", ["straße"]),
    ],
)
def test_tag_filter_matches_whole_tags_exactly(
    session: Session, tag: str, matches: list[str]
) -> None:
    """Only runs carrying exactly `tag` (as one whole tag; SQLite's LIKE ignores ASCII case, as before) are listed."""
    # Prepare
    alice, _ = create_user(session, "alice")
    names = ["paper", "a_b", "axb", "50%", "500", "x/y", "straße", "STRASSE"]
    by_id = {}
    for name in names:
        run = create_run(session, alice)
        session.query(Run).filter(Run.id == run.id).update({"tags_csv": f",other,{name},"})
        by_id[run.id] = name
    session.commit()
    # Execute
    page = run_list.list_runs(session, run_list.RunFilters(tag=tag), 50)
    # Assert
    assert sorted(by_id[r.id] for r in page.runs) == matches
