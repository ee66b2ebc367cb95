"""Fixtures of the migration tests: an empty database of each kind, to migrate by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.postgres import scratch_schema


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def bare_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database (no migration applied): a new SQLite file or a new Postgres schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'lab.db'}"
        return
    with scratch_schema("t_mig_") as (url, _schema):
        yield url
