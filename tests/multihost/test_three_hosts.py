"""The three-host drill: a run outlives the host it ran on; a host without its dataset never
gets it.

Each test builds its own lab (tests/support/netns.py): a `lab` host running Postgres, Redis
and the API, and worker hosts w1, w2, w3 in network namespaces on one bridge, each with its own
host name, FEDGEN_HOME and (empty) FEDGEN_DATA; w1 and w2 find Fashion-MNIST in Debian's
folder, w3 has that folder hidden.

test_a_run_outlives_its_host: a FedGen run on Fashion-MNIST (30 rounds, a checkpoint every 5)
starts on w1; at round 12 to 14 the host is killed (SIGKILL, then off the network). w2, started
after, must take the run over by the dead-holder rule (the lease is 600 s) from the round-10
checkpoint, finish it with every round stored once and the curve of an uninterrupted run bit for
bit (computed meanwhile by fedgen's own runner, one torch thread as in a worker), the generator
checkpoints must download through the API with the sha256 the database records, and neither
worker may have written a checkpoint file. The timings are printed (pytest -s).

test_worker_without_the_dataset_never_gets_the_run: with only w3 up, a Fashion-MNIST run stays
queued through several dispatch passes and the API says why; once w1 is up, w1 runs it and w3
never appears on any run.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from lab.config import Settings
from tests.support import netns
from tests.support.needs import needs
from tests.support.netns import Lab
from tests.support.procs import wait_for
from vocab.footprint import kept_checkpoint_rounds

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

ROUNDS, CHECKPOINT_EVERY = 30, 5
# The workers run with the default FEDGEN_KEEP_GENERATOR_CHECKPOINTS.
KEEP_GENERATORS_DEFAULT = str(Settings.model_fields["keep_generator_checkpoints"].default)
KILL_AT = 12  # w1 dies once this round is stored, before round 15's checkpoint
RESUME_FROM = 10  # the newest checkpoint before the kill
SPEC: dict[str, Any] = {
    "data": {"name": "fashion-mnist"},
    "algorithm": {"name": "fedgen"},
    "partition": {"num_users": 3},
    "users_per_round": 2,
    "rounds": ROUNDS,
    "local_steps": 10,
    "batch_size": 16,
    "checkpoint_every": CHECKPOINT_EVERY,
}
WAITING = "no live worker has dataset fashion-mnist"
PASSES = 5  # dispatch passes (FEDGEN_REAPER_S = 1 s apart) the dataset-less host must not win

# The uninterrupted run: fedgen's runner in a process of its own, one torch thread (a worker
# slot's share), the same empty FEDGEN_DATA (Fashion-MNIST from Debian's folder).
REFERENCE = """
import json, sys
from fedgen.threads import set_threads
set_threads(1)
from fedgen.events import MemorySink
from fedgen.runner import run
from fedgen.spec import parse_spec
sink = MemorySink()
run(parse_spec(json.loads(sys.argv[1])), sink)
print(json.dumps([[e.round, e.metrics["test_acc"]] for e in sink.events]))
"""


@pytest.fixture
def lab(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Lab]:
    """A started lab with hosts w1..w3 (no worker yet); its logs are printed if the test fails."""
    why = netns.available()
    needs(why is None, f"what the multi-host drill needs ({why})")
    failed_before = request.session.testsfailed
    the_lab = Lab(tmp_path)
    started = False
    try:
        the_lab.start()
        started = True
        yield the_lab
    finally:
        if not started or request.session.testsfailed > failed_before:
            print(f"\n===== logs of the lab in {tmp_path} =====\n{the_lab.logs()}")  # noqa: T201
        the_lab.close()


def _submit(api: httpx.Client, spec: dict[str, Any]) -> str:
    r = api.post("/runs", json={"spec": spec})
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


def _get(api: httpx.Client, run_id: str) -> dict[str, Any]:
    r = api.get(f"/runs/{run_id}")
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def _stored_round(lab: Lab, run_id: str) -> int:
    """The run's current round, read straight from the database (cheap to poll closely)."""
    with lab.sessions()() as s:
        query = text("SELECT current_round FROM runs WHERE id = :i")
        return int(s.execute(query, {"i": run_id}).scalar_one())


def _ended(api: httpx.Client, run_id: str) -> bool:
    return _get(api, run_id)["status"] in ("succeeded", "failed", "cancelled")


def _at(stamp: datetime | str) -> float:
    """A database or API timestamp as epoch seconds (a naive one is UTC)."""
    t = datetime.fromisoformat(stamp) if isinstance(stamp, str) else stamp
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


def test_a_run_outlives_its_host(lab: Lab, tmp_path: Path) -> None:
    t0 = time.monotonic()
    ref_data = tmp_path / "reference-data"
    ref_data.mkdir()
    reference = subprocess.Popen(
        [sys.executable, "-c", REFERENCE, json.dumps(SPEC)],
        env={
            **lab.env(tmp_path / "reference-home", FEDGEN_DATA=str(ref_data)),
            "FEDGEN_TORCH_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        },
        cwd=netns.ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        api = lab.client(lab.create_user("alice"))
        run_id = _submit(api, SPEC)

        # -- w1 runs it, and dies at round 12 to 14 -----------------------------------------
        # Watched from the worker's start (not from Celery's "ready"): on a fast machine the
        # dispatcher's send can be taken and many rounds run before that line is logged.
        w1 = lab.start_worker("w1", wait=False)

        def at_kill_round() -> bool:
            assert w1.poll() is None, f"the worker on w1 exited ({w1.returncode})"
            return _stored_round(lab, run_id) >= KILL_AT

        wait_for(at_kill_round, f"round {KILL_AT}", 180, 0.03)
        lab.kill_host("w1")
        killed_at = time.time()
        w1_last = _stored_round(lab, run_id)
        assert w1_last < RESUME_FROM + CHECKPOINT_EVERY, (
            f"w1 stored round {w1_last} before it died: the kill came too late for the drill"
        )

        # -- w2 takes it over from round 10 and finishes it ---------------------------------
        lab.start_worker("w2")
        w2_ready = time.time()
        wait_for(lambda: "w2" in (_get(api, run_id)["worker"] or ""), "w2 to claim it", 120, 0.1)
        w2_claimed = time.time()
        wait_for(lambda: _ended(api, run_id), "the run to end on w2", 240, 0.5)
        run = _get(api, run_id)
        with lab.sessions()() as s:
            first_new = s.execute(
                text("SELECT created_at FROM round_metrics WHERE run_id = :i AND round = :r"),
                {"i": run_id, "r": w1_last + 1},
            ).scalar_one()
            query = text("SELECT id, sha256 FROM checkpoints WHERE run_id = :i")
            recorded = {str(i): sha for i, sha in s.execute(query, {"i": run_id}).all()}
        out, err = reference.communicate(timeout=300)
        assert reference.returncode == 0, err[-3000:]
        expected = json.loads(out)
    finally:
        if reference.poll() is None:
            reference.kill()
            reference.wait(10)

    segments = run["segments"]
    resumed = segments[-1]
    print(  # noqa: T201 - the drill's figures (pytest -s shows them)
        f"\nthree-host drill: w1 killed after storing round {w1_last}; seconds after the kill: "
        f"w2 started and ready {w2_ready - killed_at:.1f}, claimed the run "
        f"{w2_claimed - killed_at:.1f}, resumed it from round {resumed['resumed_from']} "
        f"{_at(resumed['started_at']) - killed_at:.1f}, stored its first new round "
        f"(round {w1_last + 1}) {_at(first_new) - killed_at:.1f}; "
        f"rounds recomputed: {w1_last - RESUME_FROM}; "
        f"segments: {[(g['worker'], g['start_round'], g['last_round']) for g in segments]}"
    )
    assert run["status"] == "succeeded", run["error"]
    assert len(segments) == 2, segments  # w1's start, w2's resume: nothing else
    assert "w1" in (segments[0]["worker"] or ""), segments
    assert segments[0]["start_round"] == 0
    assert segments[0]["last_round"] == w1_last, segments  # what w1 stored, past checkpoint 10
    assert segments[0]["host"] == "w1", segments
    assert resumed["host"] == "w2", segments
    assert "w2" in (resumed["worker"] or ""), segments
    assert resumed["resumed_from"] == RESUME_FROM, segments
    assert "w3" not in json.dumps(run)

    # -- every round once, the curve of the uninterrupted run --------------------------------
    metrics = api.get(f"/runs/{run_id}/metrics").json()
    assert metrics["rounds"] == list(range(ROUNDS + 1))
    assert [r for r, _ in expected] == list(range(ROUNDS + 1))
    assert metrics["metrics"]["test_acc"] == [acc for _, acc in expected]

    # -- the generator checkpoints, downloaded through the API -------------------------------
    listed = api.get(f"/runs/{run_id}/checkpoints").json()["data"]
    generators = sorted((c for c in listed if c["kind"] == "generator"), key=lambda c: c["round"])
    # written at 5, 10, ... 30; kept: those the lab's default retention keeps
    kept = kept_checkpoint_rounds(ROUNDS, CHECKPOINT_EVERY, KEEP_GENERATORS_DEFAULT)
    assert [c["round"] for c in generators] == kept
    for c in generators:
        r = api.get(f"/runs/{run_id}/checkpoints/{c['id']}/download")
        assert r.status_code == 200, r.text
        digest = hashlib.sha256(r.content).hexdigest()
        assert digest == c["sha256"] == r.headers["X-Checkpoint-SHA256"]
        assert digest == recorded[c["id"]]  # the database's own record

    # -- no worker wrote a checkpoint file (nor copied the dataset) ----------------------------
    for name in ("w1", "w2"):
        host = lab.hosts[name]
        folder = host.checkpoint_root
        written = sorted(folder.rglob("*")) if folder.exists() else []
        assert written == [], f"{name} wrote under its checkpoint folder: {written}"
        assert sorted(host.data.rglob("*")) == [], f"{name} wrote under its FEDGEN_DATA"
    print(  # noqa: T201
        f"three-host drill: {time.monotonic() - t0:.1f} s in all "
        f"(after {lab.start_s:.1f} s to start the lab)"
    )


def test_worker_without_the_dataset_never_gets_the_run(lab: Lab) -> None:
    w3 = lab.hosts["w3"]
    hidden = lab.run_on(w3, ["sh", "-c", f"ls -A {netns.DATASETS}"])
    assert hidden == "", f"w3 still sees {netns.DATASETS}: {hidden}"
    api = lab.client(lab.create_user("alice"))
    lab.start_worker("w3")
    run_id = _submit(api, {**SPEC, "rounds": 3, "checkpoint_every": 0})

    # -- w3 alone: the run waits through several dispatch passes ------------------------------
    def w3_rows() -> int:
        """w3's rows in `workers` (its dispatch loop renews them once per pass)."""
        with lab.sessions()() as s:
            return int(
                s.execute(text("SELECT count(*) FROM workers WHERE name LIKE '%@w3'")).scalar_one()
            )

    seen: list[tuple[str, Any, int]] = []
    beats: set[Any] = set()

    def watched() -> bool:
        run = _get(api, run_id)
        seen.append((run["status"], run["worker"], len(run["segments"])))
        with lab.sessions()() as s:
            beats.update(
                s.scalars(text("SELECT heartbeat_at FROM workers WHERE name LIKE '%@w3'")).all()
            )
        return len(beats) > PASSES

    assert w3_rows() >= 1, "w3's worker has no row in `workers`"
    wait_for(watched, f"{PASSES} dispatch passes of w3", 60, 0.25)
    run = _get(api, run_id)
    assert all(status == "queued" and worker is None and n == 0 for status, worker, n in seen), (
        f"the run left the queue while only w3 (no Fashion-MNIST) was up: {seen[-5:]}, "
        f"error {run['error']!r}"
    )
    assert run.get("waiting_reason") == WAITING, run

    # -- w1 comes up: it gets the run, w3 never does ------------------------------------------
    lab.start_worker("w1")
    wait_for(lambda: _get(api, run_id)["worker"] is not None, "a worker to claim the run", 120)
    assert "w1" in _get(api, run_id)["worker"]
    wait_for(lambda: _ended(api, run_id), "the run to end on w1", 120, 0.5)
    run = _get(api, run_id)
    assert run["status"] == "succeeded", run["error"]
    assert [("w1" in (g["worker"] or ""), g["start_round"]) for g in run["segments"]] == [
        (True, 0)
    ], run["segments"]
    runs = api.get("/runs").json()["data"]
    assert [r["id"] for r in runs] == [run_id]
    for r in runs:
        assert "w3" not in (r["worker"] or "")
        assert all("w3" not in (g["worker"] or "") for g in r["segments"]), r["segments"]
    assert not os.listdir(w3.data)
