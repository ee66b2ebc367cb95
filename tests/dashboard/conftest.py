"""Dashboard fixtures: one real lab server (API + SQLite + worker code) per test session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st

from tests.support.dashboard_lab import Lab, seed_lab, start_lab


@pytest.fixture(autouse=True, scope="session")
def _component_scan_once() -> Iterator[None]:
    """Each new AppTest scans every installed distribution's metadata for Streamlit components
    (0.2-0.4 s here, hundreds of times a session); none is installed or removed while the
    tests run, so the first scan serves them all."""
    from streamlit.components.v2 import manifest_scanner

    found = manifest_scanner.scan_component_manifests()
    patch = pytest.MonkeyPatch()
    patch.setattr(manifest_scanner, "scan_component_manifests", lambda *_a, **_k: list(found))
    yield
    patch.undo()


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
