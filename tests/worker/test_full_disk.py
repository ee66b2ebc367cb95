"""A full checkpoint disk is transient: the run waits, says why, and resumes once space returns.

Checkpoints live in the database, so the disk that fills is the database's. A private Postgres
(tests/support/pg_server.py) keeps the `checkpoint_chunks` table in a tablespace on a 4 MiB tmpfs
(mounted here, as root) that a filler file has filled, while its log and every other table stay
on the big disk: a checkpoint write fails with "could not extend file ... No space left on
device" (SQLSTATE 53100), and nothing else does. Once the run shows the reason, the filler is
removed: the run resumes from its last good checkpoint and succeeds.
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
from sqlalchemy import func, select, text

import fedgen.runner as runner_mod
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from lab.models import CheckpointRow, RoundMetrics, Run
from lab.repository import checkpoints as ckpt_repo
from migrations.apply import upgrade
from tests.support import pg_server
from tests.support.factories import create_run, create_user
from tests.support.needs import needs
from worker.claimed_run import execute_run

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs owned by postgres."""
    why = pg_server.available()
    needs(why is None and shutil.which("mount") is not None, f"a private PostgreSQL ({why})")
    mount = Path(f"/tmp/fedgen-tmpfs-{os.getpid()}")
    mount.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    shutil.chown(mount, "postgres", "postgres")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    return filler


def test_full_database_disk_then_space(small_disk: Path, tmp_path: Path) -> None:
    server = pg_server.PgServer()
    try:
        upgrade(server.url)
        engine = make_engine(server.url, pool_size=2)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.execute(text(f"CREATE TABLESPACE small LOCATION '{small_disk}'"))
            c.execute(text("ALTER TABLE checkpoint_chunks SET TABLESPACE small"))
        filler = _fill(small_disk)
        factory = make_sessionmaker(engine)
        with factory() as s:
            user, _ = create_user(s)
            run = create_run(s, user, rounds=6, checkpoint_every=2)
        settings = Settings(
            home=tmp_path / "home",
            database_url=server.url,
            lease_s=60,
            heartbeat_s=0.5,
            storage_retries=30,
            storage_retry_delay_s=0.2,
        )
        out: list[str] = []
        worker = threading.Thread(
            target=lambda: out.append(
                execute_run(str(run.id), factory, runner=runner_mod.run, settings=settings)
            )
        )
        worker.start()

        def error() -> str:
            with factory() as s:
                return s.scalar(select(Run.error).where(Run.id == run.id)) or ""

        deadline = time.monotonic() + 120
        while "No space left on device" not in error() and time.monotonic() < deadline:
            time.sleep(0.05)
        notice = error()
        filler.unlink()  # space returns
        worker.join(300)
        assert not worker.is_alive()
        with factory() as s:
            row = s.get(Run, run.id)
            n = s.scalar(select(func.count()).where(RoundMetrics.run_id == run.id))
            full = ckpt_repo.latest_full(s, run.id)
            kinds = s.scalars(select(CheckpointRow.kind).where(CheckpointRow.run_id == run.id))
            kinds = sorted(kinds)
        assert "No space left on device" in notice
        assert "resuming from the last good checkpoint" in notice
        assert out == ["succeeded"]
        assert row is not None
        assert row.status == "succeeded"
        assert row.error is None
        assert n == 7
        assert full is not None
        assert full.round == 6
        assert len(ckpt_repo.read_bytes(factory, full)) == full.size
        assert kinds == ["full", "full", "model"]
        assert not (tmp_path / "home" / "checkpoints").exists() or not any(
            (tmp_path / "home" / "checkpoints").rglob("*.pt")
        )
        engine.dispose()
    finally:
        server.close()
