"""The worker reads only what a run's spec names, inside its own data roots, and records it
(issue 28 findings 4 and 5): a spec that reached the queue with a path outside FEDGEN_DATA_ROOTS
fails before anything is read; a named data.root without the files never falls back to Debian's
copy; a run's info lists the files it read, with their sha256."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import fedgen.runner as runner_mod
from fedgen.data import datasets as dsmod
from lab.config import Settings
from lab.models import Run, User
from tests.support.datafiles import MNIST_FILES, write_mnist_like
from tests.support.factories import create_run, create_user
from worker.claimed_run import execute_run
from worker.outcomes import MAX_HAND_BACKS, RunOutcome

API = "/api/v1"


def _row(session: Session, run_id: Any) -> Run:
    session.expire_all()
    row = session.get(Run, run_id)
    assert row is not None
    return row


def _never(*_args: object, **_kwargs: object) -> None:
    raise AssertionError("the runner must not be called: no file may be read")


@pytest.fixture
def lab_root(settings: Settings, tmp_path: Path) -> Path:
    root = tmp_path / "lab-data"
    root.mkdir()
    settings.data_roots = str(root)
    return root


@pytest.mark.parametrize(
    "data", [{"name": "mnist", "root": "/etc"}, {"name": "mnist", "root": "~"}]
)
def test_a_queued_spec_outside_the_roots_fails_unread(
    data: dict[str, Any],
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    lab_root: Path,
) -> None:
    """Written to the database directly (not through the API's check): the worker fails it,
    naming data.root, without loading anything (no hand-back to another worker either)."""
    user, _ = create_user(session)
    run = create_run(session, user, data=data)
    out = execute_run(str(run.id), factory, runner=_never, settings=settings, worker_name="w1")
    assert out == RunOutcome.FAILED
    row = _row(session, run.id)
    assert row.status == "failed"
    # The run's error is read by every member: the one message, not the roots or the path.
    assert row.error == "data.root: not inside a data root the lab allows (FEDGEN_DATA_ROOTS)"
    assert str(lab_root.resolve()) not in row.error


def test_a_named_root_without_the_files_never_succeeds(
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    lab_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fashion-mnist with data.root lacking its files, while a (stand-in) Debian copy is on the
    host: each worker hands it back saying data.root, and then it fails saying data.root."""
    debian = tmp_path / "debian-fashion-mnist"
    write_mnist_like(debian, MNIST_FILES, (np.arange(200) % 10, np.arange(50) % 10), gz=True)
    monkeypatch.setattr(dsmod, "DEBIAN_FASHION_MNIST", debian)
    user, _ = create_user(session)
    run = create_run(session, user, data={"name": "fashion-mnist", "root": str(lab_root / "fm")})
    outs = [
        execute_run(str(run.id), factory, runner=runner_mod.run, settings=settings, worker_name=w)
        for w in [f"w{i}" for i in range(MAX_HAND_BACKS)]
    ]
    assert outs == [RunOutcome.HANDED_BACK] * (MAX_HAND_BACKS - 1) + [RunOutcome.FAILED]
    row = _row(session, run.id)
    assert row.status == "failed"
    assert "fashion-mnist: dataset files not found under data.root" in row.error
    assert str(lab_root / "fm") in row.error
    assert str(debian) not in row.error
    assert row.current_round is None or row.current_round < 0


@pytest.mark.slow  # real training
def test_a_run_records_the_files_it_read(
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    lab_root: Path,
    client: TestClient,
    auth: dict[str, str],
) -> None:
    """A real run on a tiny MNIST in torchvision's layout: its info lists the four files (root,
    path under it, size, sha256 of the bytes), also through GET /runs/{id}/info."""
    raw = lab_root / "MNIST" / "raw"
    write_mnist_like(raw, MNIST_FILES, (np.arange(300) % 10, np.arange(60) % 10), gz=False)
    alice = session.scalars(select(User).where(User.name == "alice")).one()  # auth's user
    run = create_run(
        session, alice, data={"name": "mnist", "root": str(lab_root)}, partition={"alpha": 1.0}
    )
    out = execute_run(str(run.id), factory, runner=runner_mod.run, settings=settings)
    assert out == RunOutcome.SUCCEEDED, _row(session, run.id).error
    files = _row(session, run.id).info["data_files"]
    assert sorted(f["path"] for f in files) == sorted(f"MNIST/raw/{n}" for n in MNIST_FILES)
    for f in files:
        on_disk = lab_root / f["path"]
        assert f["root"] == str(lab_root.resolve())
        assert f["size"] == on_disk.stat().st_size
        assert f["sha256"] == hashlib.sha256(on_disk.read_bytes()).hexdigest()
    info = client.get(f"{API}/runs/{run.id}/info", headers=auth).json()
    assert info["data_files"] == files
