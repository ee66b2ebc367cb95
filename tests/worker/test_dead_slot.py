"""A slot killed with SIGKILL mid-run: its run resumes on another slot process before its lease
expires, from its last checkpoint, and the other slot's run is not interrupted.

A real `fedgen-lab worker --slots 3` (Postgres, Redis) runs two real simulations; the lease is
600 s, so only the dead-holder rule (heartbeat missed twice, no live `workers` row of its own:
lab/repository/runs.py) can bring the run back within the test. The kill-to-resume time is
printed (pytest -s); the README states its bound, FEDGEN_HEARTBEAT_S x 2 + FEDGEN_REAPER_S.
"""

from __future__ import annotations

import os
import re
import signal
import time
from datetime import datetime

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from lab.models import RoundMetrics, Run
from tests.support.factories import create_run, create_user
from tests.support.procs import wait_for as _wait
from tests.support.workers import slot_pids, start_worker

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

HEARTBEAT_S, REAPER_S, LEASE_S = 1, 1, 600


def test_a_killed_slots_run_resumes_before_its_lease_expires(pg_lab: dict) -> None:
    lab = {
        **pg_lab,
        "env": {
            **pg_lab["env"],
            "FEDGEN_HEARTBEAT_S": str(HEARTBEAT_S),
            "FEDGEN_REAPER_S": str(REAPER_S),
            "FEDGEN_LEASE_S": str(LEASE_S),
        },
    }
    factory: sessionmaker[Session] = lab["factory"]
    proc = start_worker(lab, "--slots", "3", "--threads", "1")
    try:
        _wait(lambda: lab["log"].read_text().count(" ready.") >= 3, "three ready slots", 180)
        with factory() as s:
            user, _ = create_user(s)
            spec = {
                "rounds": 30,
                "checkpoint_every": 5,
                "local_steps": 10,
                "data": {"synthetic_samples": 1200},
            }
            queue = lab["settings"].queue_prefix + "cpu"  # the dispatcher sends them
            runs = [create_run(s, user, queue=queue, seed=i, **spec).id for i in range(2)]
            victim_id, other_id = runs

        def row(rid: object) -> Run:
            with factory() as s:
                run = s.get(Run, rid)
                assert run is not None
                return run

        _wait(
            lambda: all(row(r).current_round >= 7 for r in (victim_id, other_id)),
            "both runs past round 7",
        )
        victim = row(victim_id)
        assert victim.status == "running"
        slot = re.search(r"slot\d+", victim.worker or "")
        assert slot is not None
        pid = slot_pids(lab["log"], slot.group(0))[-1]
        lease_expiry: datetime = victim.lease_expires_at  # type: ignore[assignment]
        killed_at = time.time()
        os.kill(pid, signal.SIGKILL)

        _wait(lambda: len(row(victim_id).segments) >= 2, "the victim to resume", 300)
        resumed_s = time.time() - killed_at
        _wait(
            lambda: all(row(r).status in ("succeeded", "failed") for r in (victim_id, other_id)),
            "both runs to end",
            600,
        )
        victim, other = row(victim_id), row(other_id)
        with factory() as s:
            rounds = list(
                s.scalars(
                    select(RoundMetrics.round)
                    .where(RoundMetrics.run_id == victim_id)
                    .order_by(RoundMetrics.round)
                )
            )
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    first, second = victim.segments[0], victim.segments[1]
    resumed_at = datetime.fromisoformat(second["started_at"])
    print(  # noqa: T201 - the drill's figures (pytest -s shows them)
        f"\nkill -9 of {slot.group(0)} (pid {pid}) at round >= 7: resumed by {second['worker']} "
        f"from checkpoint {second['resumed_from']} after {resumed_s:.1f} s "
        f"(bound {2 * HEARTBEAT_S + REAPER_S} s + start-up); lease would have expired "
        f"{(lease_expiry - resumed_at).total_seconds():.0f} s later"
    )
    assert victim.status == "succeeded", victim.error
    assert rounds == list(range(31))  # every round once
    assert second["resumed_from"] is not None
    assert second["resumed_from"] >= 5  # from its checkpoint, not from round 0
    assert first["start_round"] == 0
    assert resumed_at < lease_expiry  # taken back by the dead-holder rule, not the lease
    assert other.status == "succeeded", other.error
    assert len(other.segments) == 1  # the other slot's run was never interrupted
    assert other.attempt == 1
