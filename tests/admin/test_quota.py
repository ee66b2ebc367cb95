"""`fedgen-lab quota set USER BYTES|default` and `quota show` on the test database: the quota is
stored on the member (audited as quota.set by `cli`), `default` gives FEDGEN_QUOTA_BYTES back,
a size that is not one is refused naming BYTES."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from admin.cli import main
from admin.quota import parse_bytes
from lab.config import get_settings
from lab.models import AuditEvent, User
from tests.support.factories import create_user


@pytest.fixture
def lab(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`fedgen-lab` pointed at the test database, FEDGEN_QUOTA_BYTES = 1 GiB."""
    monkeypatch.setenv("FEDGEN_HOME", str(tmp_path / "cli-home"))
    monkeypatch.setenv("FEDGEN_DATABASE_URL", db_url)
    monkeypatch.setenv("FEDGEN_QUOTA_BYTES", str(1 << 30))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _quota(session: Session, name: str) -> int | None:
    session.expire_all()
    return session.scalar(select(User.quota_bytes).where(User.name == name))


def test_set_show_and_default(
    lab: None, session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """200GiB is stored as bytes and shown; `default` clears it; each set is audited."""
    create_user(session, "alice")
    create_user(session, "bob")

    assert main(["quota", "set", "alice", "200GiB"]) == 0
    out = capsys.readouterr().out
    assert _quota(session, "alice") == 200 << 30
    assert "alice: quota 200 GiB; stored 0 B" in out
    assert main(["quota", "show"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert "alice: quota 200 GiB; stored 0 B, still to come 0 B; 0 queued of 0 runs" in shown
    assert "bob: quota 1 GiB (FEDGEN_QUOTA_BYTES); stored 0 B" in "\n".join(shown)

    assert main(["quota", "set", "alice", "default"]) == 0
    assert _quota(session, "alice") is None
    assert "quota 1 GiB (FEDGEN_QUOTA_BYTES)" in capsys.readouterr().out
    rows = session.execute(select(AuditEvent.action, AuditEvent.actor_name, AuditEvent.detail))
    details = [(a, n, d["quota_bytes"]) for a, n, d in rows.all()]
    assert sorted(details, key=str) == sorted(
        [("quota.set", "cli", 200 << 30), ("quota.set", "cli", None)], key=str
    )


def test_unknown_user_and_bad_sizes(
    lab: None, session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """No such member: exit 2 naming them; a bad size: usage error naming BYTES."""
    create_user(session, "alice")
    assert main(["quota", "set", "nobody", "1GiB"]) == 2
    assert "no user 'nobody'" in capsys.readouterr().err
    for bad in ("lots", "-5", "12 parsecs", "2000000TiB"):
        with pytest.raises(SystemExit) as exc:
            main(["quota", "set", "alice", bad])
        assert exc.value.code == 2
        assert "BYTES" in capsys.readouterr().err
    assert _quota(session, "alice") is None


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("1073741824", 1 << 30),
        ("200GiB", 200 << 30),
        ("1.5 TiB", 3 << 39),
        ("500MB", 500_000_000),
        ("0", 0),
        ("Default", None),
    ],
)
def test_parse_bytes(text: str, n: int | None) -> None:
    assert parse_bytes(text) == n


def test_parse_bytes_refuses() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="BYTES: '1e9' is not a size"):
        parse_bytes("1e9")
