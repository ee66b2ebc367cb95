"""Cached API loaders. Every input, connection included, is a parameter (no hidden globals)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from dashboard import api_client
from dashboard.spec_form import SpecChoices
from dashboard.spec_schema import SchemaNode
from fedgen_lab.endpoints import LabApi
from vocab.schemas.analysis import TimingTable
from vocab.schemas.results import ComparePublic
from vocab.schemas.runs import RunInfoPublic, RunPublic, RunsPublic
from vocab.schemas.studies import StudyDefinition, StudyResults, StudySummary
from vocab.schemas.sweeps import SweepPublic, SweepSummary
from vocab.schemas.usage import UsageList
from vocab.schemas.users import UserPublic
from vocab.schemas.workers import WorkersPublic

T = TypeVar("T")


def _call(url: str, token: str, request: Callable[[LabApi], T]) -> T:
    """One request on a short-lived client (a loader's whole body)."""
    with api_client.open_client(url, token) as c:
        return request(c)


@st.cache_data(ttl=2, show_spinner=False)
def runs(url: str, token: str, limit: int = 500, **filters: Any) -> list[RunPublic]:
    """GET /runs: the newest `limit` runs under the filters (a picker's choices)."""
    return _call(url, token, lambda c: c.list_runs(limit=limit, **filters).data)


@st.cache_data(ttl=2, show_spinner=False)
def runs_page(url: str, token: str, cursor: str | None, limit: int, **filters: Any) -> RunsPublic:
    """GET /runs: one page (the first, or the one after `cursor`) with the lab's counts under
    the filters and the next page's cursor."""
    return _call(url, token, lambda c: c.list_runs(limit=limit, cursor=cursor, **filters))


@st.cache_data(ttl=5, show_spinner=False)
def run(url: str, token: str, run_id: str) -> RunPublic:
    """GET /runs/{id}: one run with its segments, waiting reason and notices."""
    return _call(url, token, lambda c: c.get_run(run_id))


@st.cache_data(ttl=2, show_spinner=False)
def workers(url: str, token: str) -> WorkersPublic:
    """GET /workers: the live workers and the slot totals."""
    return _call(url, token, lambda c: c.workers())


@st.cache_data(ttl=10, show_spinner=False)
def usage(url: str, token: str) -> UsageList:
    """GET /usage: storage and queued runs per member (an admin's: all; a member's: own)."""
    return _call(url, token, lambda c: c.usage())


@st.cache_data(ttl=30, show_spinner=False)
def me(url: str, token: str) -> UserPublic:
    """GET /me."""
    return _call(url, token, lambda c: c.me())


# Kept a minute: a plugin installed on the server shows up on the pages within one.
@st.cache_data(ttl=60, show_spinner=False)
def spec_source(url: str, token: str) -> tuple[dict[str, Any], SchemaNode]:
    """(the form's start: GET /spec/defaults with the new-run defaults, GET /spec/schema
    parsed once into typed nodes): the one source of the Submit form's fields."""
    from dashboard.spec_form import form_start

    return _call(
        url, token, lambda c: (form_start(c.spec_defaults()), SchemaNode.of(c.spec_schema()))
    )


@st.cache_data(ttl=60, show_spinner=False)
def spec_choices(url: str, token: str) -> SpecChoices:
    """The server's algorithms and datasets (plugins included), as the Submit form offers
    them (the Runs page's filters)."""
    defaults, schema = spec_source(url, token)
    return SpecChoices.of(schema, defaults)


@st.cache_data(ttl=5, show_spinner=False)
def sweeps(url: str, token: str) -> list[SweepPublic]:
    """GET /sweeps."""
    return _call(url, token, lambda c: c.list_sweeps().data)


Ids = tuple[str, ...]  # hashable, ordered run ids or metric names (cache keys)


def _compare(
    url: str, token: str, run_ids: Ids, max_points: int, metrics: Ids | None, since: int | None
) -> ComparePublic:
    """GET /compare (the body of the two cached loaders below, which differ by their TTL)."""
    return _call(
        url,
        token,
        lambda c: c.compare(
            list(run_ids), max_points=max_points, metrics=list(metrics or ()), since_round=since
        ),
    )


# Two cached functions, not one: st.cache_data keeps one cache per function, and the whole
# fetch (shared with other viewers for 5 s) and the live refresh (1 s, called on every rerun
# of a live Compare page) want different TTLs.
@st.cache_data(ttl=5, show_spinner=False)
def compare(
    url: str, token: str, run_ids: Ids, max_points: int, metrics: Ids | None = None
) -> ComparePublic:
    """GET /compare for a fixed, ordered set of runs (only `metrics` when given)."""
    return _compare(url, token, run_ids, max_points, metrics, None)


@st.cache_data(ttl=1, show_spinner=False)
def compare_since(
    url: str,
    token: str,
    run_ids: Ids,
    since_round: int,
    max_points: int,
    metrics: Ids | None = None,
) -> ComparePublic:
    """GET /compare of the rounds after `since_round` (a live refresh; shared for 1 s)."""
    return _compare(url, token, run_ids, max_points, metrics, since_round)


@st.cache_data(ttl=5, show_spinner=False)
def sweep_summary(
    url: str, token: str, sweep_id: str, statistic: str | None = None, tune: str | None = None
) -> SweepSummary:
    """GET /sweeps/{id}/summary; with `tune` (comma-separated swept fields), tuned by the
    validation counterpart of `statistic` (docs/metrics.md, Tuning)."""
    return _call(url, token, lambda c: c.sweep_summary(sweep_id, statistic=statistic, tune=tune))


@st.cache_data(ttl=10, show_spinner=False)
def timing(url: str, token: str, sweep_id: str | None) -> TimingTable:
    """GET /timing."""
    return _call(url, token, lambda c: c.timing(sweep_id=sweep_id))


@st.cache_data(ttl=30, show_spinner=False)
def info(url: str, token: str, run_id: str) -> RunInfoPublic:
    """GET /runs/{id}/info."""
    return _call(url, token, lambda c: c.info(run_id))


@st.cache_data(ttl=10, show_spinner=False)
def checkpoints(url: str, token: str, run_id: str) -> pd.DataFrame:
    """GET /runs/{id}/checkpoints as a frame."""
    from fedgen_lab.frames import checkpoints_frame

    return _call(url, token, lambda c: checkpoints_frame(c.checkpoints(run_id)))


@st.cache_data(ttl=3600, show_spinner=False, max_entries=32)
def checkpoint_bytes(url: str, token: str, run_id: str, ckpt_id: str) -> bytes:
    """Checkpoint bytes (immutable, so cached for long)."""
    return _call(url, token, lambda c: c.download_checkpoint(run_id, ckpt_id))


@st.cache_data(ttl=60, show_spinner=False)
def studies(url: str, token: str) -> list[StudySummary]:
    """GET /studies."""
    return _call(url, token, lambda c: c.list_studies().data)


@st.cache_data(ttl=5, show_spinner=False)
def study(
    url: str, token: str, name: str, dataset: str | None, seeds: int | None, rounds: int | None
) -> StudyDefinition:
    """GET /studies/{name} for these overrides (with the sweeps launched for it)."""
    return _call(url, token, lambda c: c.get_study(name, dataset, seeds, rounds))


@st.cache_data(ttl=5, show_spinner=False)
def study_results(url: str, token: str, name: str, sweep_id: str) -> StudyResults:
    """GET /studies/{name}/results?sweep_id=..."""
    return _call(url, token, lambda c: c.study_results(name, sweep_id))
