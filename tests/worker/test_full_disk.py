"""A full checkpoint disk is transient: the run waits, says why, and resumes once space returns.

The checkpoint store sits on a small tmpfs (mounted here, as root) that a filler file has
filled; the real simulation's first checkpoint write fails with ENOSPC. Once the run shows the
reason, the filler is removed: the run resumes from its last good checkpoint and succeeds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

import fedgen.runner as runner_mod
from api.config import Settings
from api.models import CheckpointRow, RoundMetrics, Run
from api.store import CheckpointStore
from tests.factories import create_run, create_user
from tests.needs import needs
from worker.execution import execute_run

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, full."""
    mount = tmp_path / "store"
    mount.mkdir()
    can = os.geteuid() == 0 and shutil.which("mount") is not None
    needs(can, "root and mount(8) for a small tmpfs")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        with (mount / "filler").open("wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_then_space(
    factory: sessionmaker[Session], session: Session, settings: Settings, small_disk: Path
) -> None:
    user, _ = create_user(session)
    run = create_run(session, user, rounds=6, checkpoint_every=2)
    s = settings.model_copy(update={"storage_retries": 20, "storage_retry_delay_s": 0.2})
    out: list[str] = []
    worker = threading.Thread(
        target=lambda: out.append(
            execute_run(
                str(run.id),
                factory,
                runner=runner_mod.run,
                settings=s,
                store=CheckpointStore(small_disk / "ck"),
            )
        )
    )
    worker.start()

    def error() -> str:
        session.expire_all()
        row = session.get(Run, run.id)
        return (row.error if row else None) or ""

    deadline = time.monotonic() + 120
    while "No space left on device" not in error() and time.monotonic() < deadline:
        time.sleep(0.05)
    notice = error()
    (small_disk / "filler").unlink()  # space returns
    worker.join(300)
    assert not worker.is_alive()
    assert "No space left on device" in notice
    assert "resuming from the last good checkpoint" in notice
    assert out == ["succeeded"]
    session.expire_all()
    row = session.get(Run, run.id)
    assert row is not None
    assert row.status == "succeeded"
    assert row.error is None
    n = session.scalar(select(func.count()).where(RoundMetrics.run_id == run.id))
    assert n == 7
    paths = session.scalars(select(CheckpointRow.path).where(CheckpointRow.run_id == run.id))
    for p in paths:
        assert (small_disk / "ck" / p).is_file()
