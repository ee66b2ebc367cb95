"""`fedgen-lab worker --slots`: the slot plan, and real slot processes against Postgres + Redis."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from lab.models import Run
from lab.queue import Sender
from tests.support.factories import create_run, create_user
from tests.support.procs import alive as _alive
from tests.support.procs import wait_for as _wait
from tests.support.workers import slot_pids, start_worker
from worker.slots import Slot, SlotError, plan_slots, slot_commands, usable_cores

ROOT = Path(__file__).resolve().parents[2]
WORKER = [sys.executable, "-m", "worker"]


# -- the plan -------------------------------------------------------------------------------
def test_default_is_one_slot_per_core_with_one_thread() -> None:
    """CPU default: N = cores, each slot one torch thread."""
    plan = plan_slots(cores=8)
    assert [s.name for s in plan] == [f"slot{i}" for i in range(8)]
    assert {s.threads for s in plan} == {1}
    assert {s.device for s in plan} == {None}


def test_threads_are_the_cores_divided_among_slots() -> None:
    """--slots N: cores // N threads each, never below one; --threads overrides."""
    assert [s.threads for s in plan_slots(cores=8, slots=2)] == [4, 4]
    assert [s.threads for s in plan_slots(cores=8, slots=3)] == [2, 2, 2]
    assert [s.threads for s in plan_slots(cores=2, slots=4)] == [1, 1, 1, 1]
    assert [s.threads for s in plan_slots(cores=8, slots=2, threads=3)] == [3, 3]
    assert plan_slots(cores=8, slots=1) == [Slot("slot0", 8)]


def test_gpus_one_slot_each_or_k_packed() -> None:
    """One slot per GPU by default; --slots-per-device K packs K runs on each GPU."""
    plan = plan_slots(cores=16, devices=["0", "1"])
    assert [(s.device, s.threads) for s in plan] == [("0", 8), ("1", 8)]
    packed = plan_slots(cores=16, devices=["2", "3"], per_device=3)
    assert [s.device for s in packed] == ["2", "2", "2", "3", "3", "3"]
    assert {s.threads for s in packed} == {2}
    env = packed[4].env()
    assert env["CUDA_VISIBLE_DEVICES"] == "3"
    assert env["FEDGEN_TORCH_THREADS"] == env["OMP_NUM_THREADS"] == "2"
    assert "CUDA_VISIBLE_DEVICES" not in plan_slots(cores=2, slots=2)[0].env()


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"slots": 0}, "--slots"),
        ({"slots": 10_000}, "--slots"),
        ({"threads": 0}, "--threads"),
        ({"per_device": 2}, "--slots-per-device"),
        ({"devices": ["0"], "per_device": 0}, "--slots-per-device"),
        ({"devices": ["0", "1"], "slots": 3}, "--slots 3"),
    ],
)
def test_bad_flags_name_the_flag(kwargs: dict, flag: str) -> None:
    """Out-of-range or contradicting flags: an error naming the flag."""
    with pytest.raises(SlotError, match=re.escape(flag)):
        plan_slots(cores=4, **kwargs)


def test_bad_flags_exit_2_without_a_traceback() -> None:
    """The command prints the error and exits 2."""
    out = subprocess.run(
        [*WORKER, "--slots", "0"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert out.returncode == 2
    assert "--slots must be between 1" in out.stderr
    assert "Traceback" not in out.stderr


def test_slot_commands_single_slot_workers_with_own_names_and_one_reaper() -> None:
    """Each slot is a `worker --slots 1` with its thread share and its own node name."""
    plan = plan_slots(cores=4, slots=2)
    cmds = slot_commands(
        plan, queues="cpu", name="cpu-7@%h", pool="solo", concurrency=1, loglevel="INFO"
    )
    names = [argv[argv.index("--name") + 1] for _, argv, _ in cmds]
    assert names == ["cpu-7-slot0@%h", "cpu-7-slot1@%h"]
    for _, argv, env in cmds:
        assert argv[argv.index("--slots") + 1] == "1"
        assert argv[argv.index("--threads") + 1] == "2"
        assert env["FEDGEN_TORCH_THREADS"] == "2"
    # Every slot registers itself as a worker of one slot (the dispatcher counts free slots).
    assert all("--no-reaper" not in argv for _, argv, _ in cmds)


def _proc_view(pid: int) -> tuple[list[bytes], set[bytes]]:
    """A process's command line and its slot share (threads, GPU) from its environment."""
    proc = Path("/proc") / str(pid)
    keys = (b"FEDGEN_TORCH_THREADS=", b"OMP_NUM_THREADS=", b"CUDA_VISIBLE_DEVICES=")
    env = {kv for kv in (proc / "environ").read_bytes().split(b"\0") if kv.startswith(keys)}
    return (proc / "cmdline").read_bytes().split(b"\0"), env


@pytest.mark.slow
@pytest.mark.postgres
def test_two_slots_run_two_simulations_at_once(pg_lab: dict) -> None:
    """--slots 2: two real runs' running intervals overlap, on two slots, one thread share each.

    Both slots are up (two 'ready' lines) before the runs are sent, so each idle slot takes
    one: with one process (prefetch 1, acks_late) the second run would start only after the
    first finished, and the intervals could not overlap.
    """
    factory: sessionmaker[Session] = pg_lab["factory"]
    proc = start_worker(pg_lab, "--slots", "2")
    try:
        _wait(lambda: pg_lab["log"].read_text().count(" ready.") >= 2, "two ready slots", 120)
        with factory() as s:
            user, _ = create_user(s)
            spec = {"rounds": 12, "local_steps": 15, "data": {"synthetic_samples": 1500}}
            runs = [create_run(s, user, seed=i, **spec).id for i in range(2)]
        send = Sender(pg_lab["settings"]).send
        for rid in runs:
            send(str(rid), pg_lab["settings"].queue_prefix + "cpu")  # the shared queue

        def rows() -> list[Run]:
            with factory() as s:
                return [s.get(Run, rid) for rid in runs]

        _wait(lambda: all(r.status in ("succeeded", "failed") for r in rows()), "both runs")
        a, b = rows()
        assert (a.status, b.status) == ("succeeded", "succeeded"), (a.error, b.error)
        intervals = (a.started_at, a.finished_at, b.started_at, b.finished_at)
        assert a.started_at < b.finished_at, intervals  # the runs overlap:
        assert b.started_at < a.finished_at, intervals  # each started before the other ended
        assert a.worker != b.worker
        assert {a.worker.split("@")[0][-5:], b.worker.split("@")[0][-5:]} == {"slot0", "slot1"}
        expected = str(max(1, usable_cores() // 2))
        assert a.versions["torch_threads"] == b.versions["torch_threads"] == expected
        slots = slot_pids(pg_lab["log"])
        assert len(slots) == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        _wait(lambda: not any(_alive(p) for p in slots), "slot processes to exit", 30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.slow
@pytest.mark.postgres
def test_kill9_of_the_supervisor_takes_its_slots_along(pg_lab: dict) -> None:
    """kill -9 of the slot supervisor alone (not its group): the kernel stops every slot."""
    proc = start_worker(pg_lab, "--slots", "2")
    try:
        _wait(lambda: len(slot_pids(pg_lab["log"])) == 2, "two slot processes", 60)
        slots = slot_pids(pg_lab["log"])
        assert all(_alive(p) for p in slots)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        _wait(lambda: not any(_alive(p) for p in slots), "slot processes to die", 30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.slow
@pytest.mark.postgres
def test_a_killed_slot_restarts_alone_and_the_other_keeps_running(pg_lab: dict) -> None:
    """kill -9 of one slot (as the kernel's OOM killer does): it comes back as the same slot."""
    # Prepare
    log: Path = pg_lab["log"]
    proc = start_worker(pg_lab, "--slots", "2")
    try:
        _wait(lambda: log.read_text().count(" ready.") >= 2, "two ready slots", 120)
        [slot0] = slot_pids(log, "slot0")
        [slot1] = slot_pids(log, "slot1")
        before = _proc_view(slot1)
        # Execute
        os.kill(slot1, signal.SIGKILL)
        _wait(lambda: len(slot_pids(log, "slot1")) == 2, "slot1 to restart", 60)
        _wait(lambda: len(re.findall(r"-slot1@\S+ ready\.", log.read_text())) == 2, "slot1", 120)
        # Assert
        text = log.read_text()
        assert "[worker] slot1 exited with -9 (SIGKILL); restarting in 1 s (restart 1)" in text
        new = slot_pids(log, "slot1")[-1]
        assert _alive(new)
        assert _proc_view(new) == before  # same node name, threads and GPU
        assert slot_pids(log, "slot0") == [slot0]
        assert _alive(slot0)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        _wait(lambda: not (_alive(slot0) or _alive(new)), "slot processes to exit", 30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
