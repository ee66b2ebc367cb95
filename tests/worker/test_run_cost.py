"""What a run cost: CPU seconds and peak resident memory, stored while it runs and at its end,
added up over its segments (a resume adds its CPU seconds; peaks keep the larger)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

import fedgen.runner as runner_mod
from fedgen.data.common import DatasetError
from fedgen.events import RoundEvent, RunInfo, RunSummary
from fedgen.resources import Cost, ResourceMeter, format_bytes
from fedgen.spec import ExperimentSpec
from lab.config import Settings
from lab.models import Run
from tests.support.factories import create_run, create_user
from tests.support.fakes import FakeRunner
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome


def _row(session: Session, rid: uuid.UUID) -> Run:
    session.expire_all()
    row = session.get(Run, rid)
    assert row is not None
    return row


class _LoseDataAfter:
    """Passes events on; after round `r` is stored, raises DatasetError (the worker hands the
    run back mid-run, storing what the segment cost, and the next claim resumes it)."""

    def __init__(self, inner: Any, r: int) -> None:
        self.inner, self.r = inner, r

    def on_start(self, info: RunInfo) -> None:
        self.inner.on_start(info)

    def on_round(self, event: RoundEvent) -> None:
        self.inner.on_round(event)
        if event.round == self.r:
            raise DatasetError("synthetic: the data went away (a test)")

    def on_finish(self, summary: RunSummary) -> None:
        self.inner.on_finish(summary)


# The real runner once is enough (the Postgres path of the same writes: tests/worker/test_oom.py).
@pytest.mark.slow  # real training
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_real_run_records_its_cost_and_a_resume_adds_to_it(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """The real runner: round 1 stored, then the worker hands the run back (cpu_s and
    peak_rss_bytes stored); a second claim resumes at round 2 and finishes: cpu_s grew, the peak
    kept the larger; no GPU, so gpu_peak_bytes stays null."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=4)

    def first(spec: ExperimentSpec, sink: Any, **kw: Any) -> RunSummary:
        return runner_mod.run(spec, _LoseDataAfter(sink, 1), **kw)

    assert (
        execute_run(str(run.id), factory, runner=first, settings=settings) == RunOutcome.HANDED_BACK
    )
    row = _row(session, run.id)
    assert row.current_round == 1
    first_cpu, first_rss = row.cpu_s, row.peak_rss_bytes
    assert first_cpu is not None
    assert first_cpu > 0
    assert first_rss is not None
    assert first_rss > 50 * 2**20
    assert row.gpu_peak_bytes is None

    out = execute_run(str(run.id), factory, runner=runner_mod.run, settings=settings)

    assert out == RunOutcome.SUCCEEDED
    row = _row(session, run.id)
    assert [s["start_round"] for s in row.segments] == [0, 2]
    assert row.cpu_s is not None
    assert row.cpu_s > first_cpu
    assert row.peak_rss_bytes is not None
    assert row.peak_rss_bytes >= first_rss
    assert row.gpu_peak_bytes is None


def test_a_live_run_shows_its_cost_before_it_ends(
    factory: sessionmaker[Session], session: Session, settings: Settings
) -> None:
    """The lease's heartbeat stores the cost so far: it is on the row while round 1 runs."""
    user, _ = create_user(session)
    run = create_run(session, user, rounds=2)
    seen: list[float | None] = []

    def round_done(r: int) -> None:
        if r != 1:
            return
        deadline = time.monotonic() + 30  # heartbeats every 0.2 s (the settings fixture)
        with factory() as s:
            while (cpu := s.get(Run, run.id).cpu_s) is None and time.monotonic() < deadline:
                time.sleep(0.05)
                s.expire_all()
        seen.append(cpu)

    out = execute_run(
        str(run.id), factory, runner=FakeRunner(on_round=round_done), settings=settings
    )

    assert out == RunOutcome.SUCCEEDED
    assert seen
    assert seen[0] is not None
    assert seen[0] >= 0
    assert _row(session, run.id).cpu_s is not None


def test_segments_add_cpu_seconds_and_keep_the_larger_peaks() -> None:
    """Cost.merged: CPU seconds add up, each peak takes the larger, unknown stays unknown."""
    earlier = Cost(cpu_s=2.0, peak_rss_bytes=300, gpu_peak_bytes=None)
    now = Cost(cpu_s=1.5, peak_rss_bytes=200, gpu_peak_bytes=None)
    assert now.merged(earlier) == Cost(3.5, 300, None)
    assert now.merged(None) == now
    assert Cost.from_columns({"cpu_s": None, "peak_rss_bytes": None}) is None
    meter = ResourceMeter("cpu").start()
    sum(i * i for i in range(200_000))  # some CPU time for the meter to see
    reading = meter.reading()
    assert reading.cpu_s > 0
    assert reading.peak_rss_bytes
    assert reading.gpu_peak_bytes is None
    assert [format_bytes(n) for n in (512, 3 * 2**20, 5 * 2**30, None)] == [
        "512 B",
        "3 MiB",
        "5 GiB",
        "?",
    ]


def test_the_live_page_says_what_the_run_cost() -> None:
    """The Live page's caption: so far while it runs, nothing before it was measured."""
    from dashboard.live_view import cost_caption
    from tests.support.factories import public_run

    assert cost_caption(public_run(status="queued", oom_count=0)) is None
    running = {"status": "running", "cpu_s": 1234.56, "peak_rss_bytes": 3 * 2**30, "oom_count": 0}
    assert cost_caption(public_run(**running)) == ("Cost so far: 1,234.6 CPU s · peak memory 3 GiB")
    failed = {**running, "status": "failed", "gpu_peak_bytes": 2**29, "oom_count": 2}
    assert cost_caption(public_run(**failed)) == (
        "Cost: 1,234.6 CPU s · peak memory 3 GiB · GPU peak 512 MiB · CUDA out of memory 2 times"
    )
