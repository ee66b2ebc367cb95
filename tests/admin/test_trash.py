"""`fedgen-lab trash purge [--older-than-days D]` on the test database: what has been in the
trash longer than D days goes for good (recorded as run.purge by `system`), the rest stays;
a bad D is refused naming the flag."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from admin.cli import main
from lab.config import get_settings
from lab.models import AuditEvent, Run, utcnow
from lab.repository import trash as trash_repo
from tests.support.factories import create_run, create_user


@pytest.fixture
def lab(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`fedgen-lab` pointed at the test database."""
    monkeypatch.setenv("FEDGEN_HOME", str(tmp_path / "cli-home"))
    monkeypatch.setenv("FEDGEN_DATABASE_URL", db_url)
    monkeypatch.delenv("FEDGEN_TRASH_DAYS", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_purge_older_than_days(
    lab: None, session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trashed 2 days ago: purged with --older-than-days 1; trashed just now: kept."""
    user, _ = create_user(session)
    old, young = create_run(session, user), create_run(session, user)
    old_id, young_id = old.id, young.id
    trash_repo.trash_run(session, old_id, "alice", utcnow() - timedelta(days=2))
    trash_repo.trash_run(session, young_id, "alice", utcnow())
    session.commit()

    code = main(["trash", "purge", "--older-than-days", "1"])

    assert code == 0
    assert "purged 1 run(s) and 0 sweep(s) in the trash for over 1 days" in capsys.readouterr().out
    session.expire_all()
    assert session.get(Run, old_id) is None
    assert session.get(Run, young_id) is not None
    row = session.execute(select(AuditEvent.action, AuditEvent.subject_id, AuditEvent.actor_name))
    assert row.all() == [("run.purge", str(old_id), "system")]


def test_a_bad_number_of_days_names_the_flag(lab: None, capsys: pytest.CaptureFixture[str]) -> None:
    """A negative or non-numeric D: usage error (exit 2) naming --older-than-days."""
    for bad in ("-1", "soon"):
        with pytest.raises(SystemExit) as exc:
            main(["trash", "purge", "--older-than-days", bad])
        assert exc.value.code == 2
        assert "--older-than-days" in capsys.readouterr().err
