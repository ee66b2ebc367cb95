"""`fedgen-lab checkpoints import`: file checkpoints written before checkpoints moved into the
database go into it (issue 18, item 2)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from admin.cli import main
from lab.config import get_settings
from lab.db import make_engine, make_sessionmaker
from lab.models import CheckpointRow
from lab.repository import checkpoints as ckpt_repo
from lab.store import CheckpointStore
from tests.support.factories import create_run, create_user


@pytest.fixture
def lab(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[sessionmaker[Session], CheckpointStore, uuid.UUID]]:
    """The CLI's settings on the test database; a run; the legacy store FEDGEN_HOME/checkpoints."""
    home = tmp_path / "home"
    monkeypatch.setenv("FEDGEN_HOME", str(home))
    monkeypatch.setenv("FEDGEN_DATABASE_URL", db_url)
    monkeypatch.setenv("FEDGEN_BROKER_URL", "memory://")
    monkeypatch.delenv("FEDGEN_CHECKPOINT_DIR", raising=False)
    get_settings.cache_clear()
    engine = make_engine(db_url)
    factory = make_sessionmaker(engine)
    with factory() as s:
        user, _ = create_user(s)
        run_id = create_run(s, user).id
        s.commit()
    yield factory, CheckpointStore(home / "checkpoints"), run_id
    engine.dispose()
    get_settings.cache_clear()


def _legacy(
    factory: sessionmaker[Session],
    store: CheckpointStore,
    run_id: uuid.UUID,
    round_: int,
    data: bytes,
    *,
    sha256: str | None = None,
) -> tuple[uuid.UUID, Path]:
    """A checkpoint as written before: its file in the store, its row with a `path`."""
    digest = hashlib.sha256(data).hexdigest()
    rel = store.put(str(run_id), round_, "full", digest, data)
    with factory() as s, s.begin():
        row = CheckpointRow(
            run_id=run_id,
            round=round_,
            kind="full",
            size=len(data),
            sha256=sha256 or digest,
            path=rel,
        )
        s.add(row)
        s.flush()
        return row.id, store.path(rel)


def test_import_moves_files_into_the_database(
    lab: tuple[sessionmaker[Session], CheckpointStore, uuid.UUID],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each file's bytes go into chunk rows, its row's path becomes NULL, the file is removed;
    a file whose sha256 differs from its row's is reported and left alone (exit 1)."""
    # Prepare
    factory, store, run_id = lab
    big = bytes(range(256)) * 9000  # 2.3 MB: three chunk rows
    small = b"round one"
    good = [_legacy(factory, store, run_id, r, d) for r, d in ((0, big), (1, small))]
    bad_id, bad_file = _legacy(factory, store, run_id, 2, b"changed", sha256="0" * 64)
    # Execute
    code = main(["checkpoints", "import"])
    # Assert
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0] == f"imported 2 checkpoints (2.3 MB) from {store.root}; 1 problem"
    assert out[1].startswith(f"  {run_id}/000002-full-")
    assert "sha256 differs" in out[1]
    assert len(out) == 2
    with factory() as s:
        for (ckpt_id, file), data in zip(good, (big, small), strict=True):
            row = s.get(CheckpointRow, ckpt_id)
            assert row is not None
            assert row.path is None
            assert ckpt_repo.read_bytes(factory, row) == data
            assert not file.exists()
        bad = s.get(CheckpointRow, bad_id)
        assert bad is not None
        assert bad.path is not None
        assert bad_file.read_bytes() == b"changed"
    # Again: nothing left to import but the bad file, which is reported again.
    assert main(["checkpoints", "import"]) == 1
    assert capsys.readouterr().out.startswith(
        f"imported 0 checkpoints (0 B) from {store.root}; 1 problem\n"
    )


def test_import_with_nothing_to_do_exits_0(
    lab: tuple[sessionmaker[Session], CheckpointStore, uuid.UUID],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No file checkpoints: 0 imported, 0 problems, exit 0; the connections go to stderr."""
    _, store, _ = lab
    assert main(["checkpoints", "import"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"imported 0 checkpoints (0 B) from {store.root}; 0 problems\n"
    assert captured.err.startswith("fedgen-lab checkpoints import\n")
