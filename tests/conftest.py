"""Shared DB/API fixtures: a migrated SQLite file per test, a Postgres schema per session.

Tests marked `postgres` fail (not skip) when CI=true and the server is unreachable.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from api.main import create_app
from fedgen.algorithms import registry
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from migrations.apply import upgrade
from tests.support.factories import create_user
from tests.support.postgres import scratch_schema, truncate


def pytest_configure(config: pytest.Config) -> None:  # noqa: ARG001 - pytest's signature
    """Under `pytest -n N` each worker trains with one torch thread: N workers of as many
    threads as cores oversubscribe the CPU (two 2-thread workers on 2 cores ran a Fashion-MNIST
    test 14x slower than two 1-thread ones, 203 s vs 14 s). Processes the tests start keep
    their own setting (a lab worker's --threads)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a browser test first, then files with a slow one, then the rest; each file's
    own order kept. `make test` hands whole files to its two workers in this order (--dist
    loadfile --no-loadscope-reorder): xdist's own order, most tests first, started the
    one-test browser walks (one to three minutes each) last, where one could run alone."""

    def weight(item: pytest.Item) -> int:
        return (
            2 if item.get_closest_marker("browser") else int(bool(item.get_closest_marker("slow")))
        )

    heaviest: dict[str, int] = {}
    for item in items:
        path = item.nodeid.partition("::")[0]
        heaviest[path] = max(heaviest.get(path, 0), weight(item))
    items.sort(key=lambda item: -heaviest[item.nodeid.partition("::")[0]])  # stable


@pytest.fixture
def algorithms_restored() -> Iterator[None]:
    """The algorithm registry as it was before the test, whatever the test registered."""
    saved = registry.snapshot()
    yield
    registry.restore(saved)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once with `alembic upgrade head`; tests copy it."""
    path = tmp_path_factory.mktemp("tpl") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A uniquely named schema in the `test` database, migrated, dropped at the end."""
    with scratch_schema("t_") as (url, _schema):
        upgrade(url)
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> Iterator[str]:
    """A migrated, empty database: a copied SQLite file, or the session's Postgres schema."""
    if request.param == "sqlite":
        path = tmp_path / "lab.db"
        shutil.copy(sqlite_template, path)
        yield f"sqlite:///{path}"
        return
    url = request.getfixturevalue("pg_url")
    # Emptied before as well as after: tests that hold the session's schema through a module
    # fixture (a live lab, a worker process) may leave rows that must not count here.
    engine = make_engine(url, pool_size=1)
    truncate(engine)
    yield url
    truncate(engine)
    engine.dispose()


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """The engine of the test database."""
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    """Sessionmaker bound to the test database."""
    return make_sessionmaker(engine)


@pytest.fixture
def session(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session for preparing and checking rows."""
    with factory() as s:
        yield s


@pytest.fixture
def settings(tmp_path: Path, db_url: str) -> Settings:
    """Settings with FEDGEN_HOME in tmp_path and short leases."""
    return Settings(
        home=tmp_path / "home",
        database_url=db_url,
        lease_s=30,
        heartbeat_s=0.2,
        broker_url="memory://",
    )


@pytest.fixture
def enqueued() -> list[tuple[str, str]]:
    """What the API sent to the queue: (run_id, device)."""
    return []


@pytest.fixture
def client(
    settings: Settings, factory: sessionmaker[Session], enqueued: list[tuple[str, str]]
) -> Iterator[TestClient]:
    """A TestClient on a real database; enqueue records instead of sending."""
    app = create_app(
        settings,
        session_factory=factory,
        enqueue=lambda rid, dev: enqueued.append((rid, dev)),
        broker_check=lambda: None,
        sse_poll_s=0.02,
    )
    with TestClient(app) as c:
        yield c


@pytest.fixture
def tokens(session: Session) -> dict[str, str]:
    """Tokens of alice, bob and an admin."""
    return {
        name: create_user(session, name, name == "admin")[1] for name in ("alice", "bob", "admin")
    }


@pytest.fixture
def auth(tokens: dict[str, str]) -> dict[str, str]:
    """alice's Authorization header."""
    return {"Authorization": f"Bearer {tokens['alice']}"}
