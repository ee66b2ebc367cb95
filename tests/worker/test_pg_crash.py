"""Postgres crashes mid-run (`pg_ctl stop -m immediate`), six times, with short and long rounds.

A private server (tests/support/pg_server.py) keeps asynchronously committed rounds in its log buffers
for up to 10 s (wal_writer_delay), so a crash a moment after a round committed loses that
round, as it did in the issue's drill. The worker is the real execute_run with the real
simulation (the synthetic set), its engine committing asynchronously like a lab worker's, and a
loop that retries on DatabaseUnavailable like the Celery task. Crashes come right after a
round was written:
- short: the next round is written while the server is down (the write fails, the task retries);
- long: the next round outlasts the outage and is written after recovery (today's code wrote it
  past the hole and ended `succeeded` with a round missing).
The run must end succeeded with rounds 0..R each once and the curve of an uninterrupted run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

import fedgen.runner as runner_mod
from fedgen.events import MemorySink, RoundEvent, RunInfo, RunSummary, Sink
from fedgen.spec import ExperimentSpec, parse_spec
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from lab.models import RoundMetrics, Run
from lab.store import CheckpointStore
from migrations.apply import upgrade
from tests.support import pg_server
from tests.support.factories import create_run, create_user, make_spec
from tests.support.needs import needs
from worker.claimed_run import DatabaseUnavailable, execute_run
from worker.outcomes import RunOutcome

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

ROUNDS = 14
# round after which the server crashes -> how the next write meets the outage
CRASHES = {2: "short", 5: "long", 7: "short", 10: "long", 12: "short", ROUNDS: "long"}
OUTAGE_S = 1.0


@pytest.fixture(scope="module")
def server() -> Iterator[pg_server.PgServer]:
    why = pg_server.available()
    needs(why is None, f"a private PostgreSQL server ({why})")
    srv = pg_server.PgServer({"wal_writer_delay": "10s", "wal_writer_flush_after": "1GB"})
    try:
        upgrade(srv.url)
        yield srv
    finally:
        srv.close()


class Crasher:
    """Crashes the server once after each scheduled round, and holds the next write back
    until the outage is over (long) or until the server is down (short)."""

    def __init__(self, server: pg_server.PgServer, lost: Callable[[int], bool]) -> None:
        self.server, self.lost = server, lost
        self.fired: set[int] = set()
        self.lost_rounds: list[int] = []
        self.down = threading.Event()
        self.up = threading.Event()
        self.up.set()

    def after_write(self, round_: int) -> None:
        if round_ not in CRASHES or round_ in self.fired:
            return
        self.fired.add(round_)
        self.up.clear()
        self.down.clear()
        threading.Thread(target=self._outage, args=(round_,), daemon=True).start()
        self.down.wait(60)
        if CRASHES[round_] == "long":
            self.up.wait(120)  # the next round takes longer than the outage

    def _outage(self, round_: int) -> None:
        self.server.crash()
        self.down.set()
        time.sleep(OUTAGE_S)
        self.server.start()
        if self.lost(round_):
            self.lost_rounds.append(round_)
        self.up.set()


class CrashingSink:
    """The worker's sink, with the crash schedule run after each round it writes."""

    def __init__(self, sink: Sink, crasher: Crasher) -> None:
        self.sink, self.crasher = sink, crasher

    def on_start(self, info: RunInfo) -> None:
        self.sink.on_start(info)

    def on_round(self, event: RoundEvent) -> None:
        self.sink.on_round(event)
        self.crasher.after_write(event.round)

    def on_finish(self, summary: RunSummary) -> None:
        self.sink.on_finish(summary)


def _work(run_id: str, runner: Any, settings: Settings, url: str, store: CheckpointStore) -> str:
    """execute_run as the Celery task drives it: retried while the database is unavailable."""
    factory = make_sessionmaker(make_engine(url, async_commit=True, pool_size=2))
    token: str | None = None
    for _ in range(200):
        try:
            return execute_run(
                run_id, factory, runner=runner, settings=settings, store=store, release_token=token
            )
        except DatabaseUnavailable as exc:
            token = exc.token
            time.sleep(0.3)
    raise AssertionError("the run never got past the outages")


def test_postgres_crashes_leave_no_hole(server: pg_server.PgServer, tmp_path: Path) -> None:
    spec_dict = make_spec(rounds=ROUNDS, checkpoint_every=4, local_steps=3)
    spec: ExperimentSpec = parse_spec(spec_dict)
    reference = MemorySink()
    runner_mod.run(spec, reference)
    expected = [(e.round, e.metrics["test_acc"]) for e in reference.events]

    check = make_sessionmaker(make_engine(server.url, pool_size=1))
    with check() as s:
        user, _ = create_user(s)
        run_id = create_run(
            s, user, **{k: spec_dict[k] for k in ("rounds", "checkpoint_every")}, local_steps=3
        ).id

    def lost(round_: int) -> bool:
        with check() as s:
            stmt = select(RoundMetrics.round).where(
                RoundMetrics.run_id == run_id, RoundMetrics.round == round_
            )
            return s.scalar(stmt) is None

    crasher = Crasher(server, lost)

    def runner(spec: ExperimentSpec, sink: Sink, **kw: Any) -> RunSummary:
        return runner_mod.run(spec, CrashingSink(sink, crasher), **kw)

    settings = Settings(
        home=tmp_path / "home", database_url=server.url, lease_s=60, heartbeat_s=0.5
    )
    out = _work(str(run_id), runner, settings, server.url, CheckpointStore(tmp_path / "ck"))

    with check() as s:
        row = s.get(Run, run_id)
        assert row is not None
        rows = s.execute(
            select(RoundMetrics.round, RoundMetrics.test_acc)
            .where(RoundMetrics.run_id == run_id)
            .order_by(RoundMetrics.round)
        ).all()
        n = s.scalar(select(func.count()).where(RoundMetrics.run_id == run_id))
    print(  # noqa: T201 - the drill's figures (pytest -s shows them)
        f"\n{len(crasher.fired)} crashes after rounds {sorted(crasher.fired)}; the crash lost "
        f"the round just written after rounds {crasher.lost_rounds}; "
        f"{len(row.segments)} segments starting at {[g['start_round'] for g in row.segments]}"
    )
    assert out == RunOutcome.SUCCEEDED
    assert row.status == "succeeded"
    assert sorted(crasher.fired) == sorted(CRASHES)
    assert crasher.lost_rounds, "no crash lost a round: the drill tested nothing"
    assert n == ROUNDS + 1
    assert [(r, a) for r, a in rows] == expected
