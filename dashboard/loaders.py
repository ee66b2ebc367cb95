"""Cached API loaders. Every input, connection included, is a parameter (no hidden globals)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard.client import LabClient


@st.cache_data(ttl=2, show_spinner=False)
def runs(url: str, token: str, limit: int = 500, **filters: Any) -> list[dict[str, Any]]:
    """GET /runs (newest first) as a list of run dicts."""
    with LabClient(url, token) as c:
        return list(c.list_runs(limit=limit, **filters).get("data") or [])


@st.cache_data(ttl=30, show_spinner=False)
def me(url: str, token: str) -> dict[str, Any]:
    """GET /me."""
    with LabClient(url, token) as c:
        return c.me()


@st.cache_data(ttl=5, show_spinner=False)
def sweeps(url: str, token: str) -> list[dict[str, Any]]:
    """GET /sweeps."""
    with LabClient(url, token) as c:
        return list(c.list_sweeps().get("data") or [])


@st.cache_data(ttl=5, show_spinner=False)
def compare(
    url: str,
    token: str,
    run_ids: tuple[str, ...],
    max_points: int,
    metrics: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """GET /compare for a fixed, ordered set of runs (only `metrics` when given)."""
    with LabClient(url, token) as c:
        return c.compare(list(run_ids), max_points=max_points, metrics=list(metrics or ()))


@st.cache_data(ttl=5, show_spinner=False)
def sweep_summary(url: str, token: str, sweep_id: str) -> Any:
    """GET /sweeps/{id}/summary?format=json."""
    with LabClient(url, token) as c:
        return c.sweep_summary(sweep_id, "json")


@st.cache_data(ttl=10, show_spinner=False)
def timing(url: str, token: str, sweep_id: str | None) -> Any:
    """GET /timing."""
    with LabClient(url, token) as c:
        return c.timing(sweep_id=sweep_id)


@st.cache_data(ttl=30, show_spinner=False)
def info(url: str, token: str, run_id: str) -> dict[str, Any]:
    """GET /runs/{id}/info."""
    with LabClient(url, token) as c:
        return c.info(run_id)


@st.cache_data(ttl=10, show_spinner=False)
def checkpoints(url: str, token: str, run_id: str) -> pd.DataFrame:
    """GET /runs/{id}/checkpoints as a frame."""
    from dashboard.frames import checkpoints_frame

    with LabClient(url, token) as c:
        return checkpoints_frame(c.checkpoints(run_id))


@st.cache_data(ttl=3600, show_spinner=False, max_entries=32)
def checkpoint_bytes(url: str, token: str, run_id: str, ckpt_id: str) -> bytes:
    """Checkpoint bytes (immutable, so cached for long)."""
    with LabClient(url, token) as c:
        return c.download_checkpoint(run_id, ckpt_id)


@st.cache_data(ttl=60, show_spinner=False)
def studies(url: str, token: str) -> list[dict[str, Any]]:
    """GET /studies."""
    with LabClient(url, token) as c:
        return list(c.list_studies().get("data") or [])


@st.cache_data(ttl=5, show_spinner=False)
def study(
    url: str, token: str, name: str, dataset: str | None, seeds: int | None, rounds: int | None
) -> dict[str, Any]:
    """GET /studies/{name} for these overrides (with the sweeps launched for it)."""
    with LabClient(url, token) as c:
        return c.get_study(name, dataset, seeds, rounds)


@st.cache_data(ttl=5, show_spinner=False)
def study_results(url: str, token: str, name: str, sweep_id: str) -> dict[str, Any]:
    """GET /studies/{name}/results?sweep_id=..."""
    with LabClient(url, token) as c:
        return c.study_results(name, sweep_id)
