"""Dashboard fixtures: one real lab server (API + SQLite + worker code) per test session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st

from tests.dashboard.lab import Lab, seed_lab, start_lab


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The real API on a loopback port, on a fresh test database."""
    server = start_lab(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def seeded(lab: Lab) -> dict[str, Any]:
    """A finished 4-run sweep and a queued run, written through the API and the worker."""
    return seed_lab(lab)


@pytest.fixture
def lab_env(lab: Lab, seeded: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Point the dashboard at the seeded lab server; start with empty Streamlit caches."""
    monkeypatch.setenv("FEDGEN_API_URL", lab.url)
    monkeypatch.setenv("FEDGEN_TOKEN", lab.token)
    st.cache_data.clear()
    return seeded


@pytest.fixture
def app_path() -> str:
    """The dashboard entrypoint."""
    return str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
