"""Worker test fixtures: a Postgres schema and Redis with a unique queue prefix (`pg_lab`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from tests.support.needs import needs
from tests.support.workers import ROOT, redis_ok


@pytest.fixture
def pg_lab(pg_url: str, tmp_path: Path) -> Iterator[dict]:
    """A Postgres schema + Redis with a unique queue prefix, and a sessionmaker on it."""
    needs(redis_ok(), "Redis at 127.0.0.1:6379")
    prefix = f"s{uuid.uuid4().hex[:8]}-"
    broker = "redis://127.0.0.1:6379/0"
    env = dict(
        os.environ,
        FEDGEN_DATABASE_URL=pg_url,
        FEDGEN_BROKER_URL=broker,
        FEDGEN_HOME=str(tmp_path / "home"),
        FEDGEN_QUEUE_PREFIX=prefix,
        FEDGEN_REAPER_S="1",
        PYTHONPATH=str(ROOT),
    )
    settings = Settings(
        database_url=pg_url, broker_url=broker, home=tmp_path / "home", queue_prefix=prefix
    )
    engine = make_engine(pg_url, pool_size=2)
    factory = make_sessionmaker(engine)
    yield {"env": env, "settings": settings, "factory": factory, "log": tmp_path / "worker.log"}
    with engine.begin() as c:
        c.exec_driver_sql("TRUNCATE runs, users CASCADE")
    engine.dispose()
