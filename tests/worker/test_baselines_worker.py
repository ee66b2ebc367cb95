"""The non-IID baselines of issue 32 end to end: each submitted through the API and run by one
real worker process (shared by the module's tests), on PostgreSQL and Redis; the run succeeds,
records its algorithm's own metric, and its stored full checkpoint is within 10% below the
estimate the API sized it with (`fedgen.sizes`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from fedgen.sizes import estimate_checkpoint_bytes
from fedgen.spec import parse_spec
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from tests.support.factories import create_user
from tests.support.needs import needs
from tests.support.postgres import truncate
from tests.support.workers import ROOT, redis_ok, until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
API = "/api/v1"
REDIS = "redis://127.0.0.1:6379/0"
TINY: dict[str, Any] = {
    "data": {"name": "synthetic", "synthetic_samples": 600, "synthetic_classes": 4},
    "partition": {"num_users": 4, "alpha": 1.0},
    # every user trains each round: all of their kept state exists (it is made on a user's
    # first round), so the checkpoint is the size the estimate gives for the users ever sampled
    "users_per_round": 4,
    "rounds": 2,
    "local_steps": 2,
    "batch_size": 16,
    "checkpoint_every": 0,
}
# Each algorithm with its parameters, and a metric only it writes (None: FedAvg's metrics).
ALGORITHMS: dict[str, tuple[dict[str, Any], str | None]] = {
    "scaffold": ({"name": "scaffold", "global_lr": 1.0}, "control_variate_norm"),
    "feddyn": ({"name": "feddyn", "alpha": 0.01}, "feddyn_h_norm"),
    "moon": ({"name": "moon", "mu": 1.0, "temperature": 0.5}, None),
    "fednova": ({"name": "fednova", "local_steps_spread": 1}, "tau_eff"),
    "fedadam": ({"name": "fedadam", "server_lr": 0.01}, "pseudo_grad_norm"),
    "fedyogi": ({"name": "fedyogi", "server_lr": 0.01}, "pseudo_grad_norm"),
    "fedavgm": ({"name": "fedavgm", "server_momentum": 0.9}, "pseudo_grad_norm"),
}


@pytest.fixture(scope="module")
def lab(
    pg_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """The API in this process and one worker process, on a queue prefix of their own."""
    needs(redis_ok(), "Redis at 127.0.0.1:6379")
    tmp = tmp_path_factory.mktemp("baselines")
    prefix = f"b{uuid.uuid4().hex[:8]}-"
    home = tmp / "home"
    settings = Settings(database_url=pg_url, broker_url=REDIS, home=home, queue_prefix=prefix)
    engine = make_engine(pg_url)
    factory = make_sessionmaker(engine)
    with factory() as session:
        _, token = create_user(session, f"baselines-{prefix}")
    env = {
        **os.environ,
        "FEDGEN_DATABASE_URL": pg_url,
        "FEDGEN_BROKER_URL": REDIS,
        "FEDGEN_HOME": str(home),
        "FEDGEN_QUEUE_PREFIX": prefix,
        "FEDGEN_REAPER_S": "0.5",
        "OMP_NUM_THREADS": "1",
    }
    log = tmp / "worker.log"
    with log.open("wb") as out:
        argv = ["--slots", "1", "--queues", "cpu", "--loglevel", "WARNING"]
        worker = subprocess.Popen(
            [sys.executable, "-m", "worker", *argv],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        with TestClient(create_app(settings, session_factory=factory)) as client:
            yield client, {"Authorization": f"Bearer {token}"}
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(30)
        truncate(engine)  # the session's schema is shared: leave it empty
        engine.dispose()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_baseline_runs_through_api_and_worker(
    name: str, lab: tuple[TestClient, dict[str, str]]
) -> None:
    # Prepare
    client, auth = lab
    algorithm, own_metric = ALGORITHMS[name]
    spec = {**TINY, "algorithm": algorithm}
    # Execute
    made = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    assert made.status_code == 202, made.text
    rid = made.json()["id"]
    run = until(
        lambda: (
            (r := client.get(f"{API}/runs/{rid}", headers=auth).json())["status"]
            in ("succeeded", "failed")
            and r
        ),
        180,
        f"the {name} run to end",
    )
    metrics = client.get(f"{API}/runs/{rid}/metrics", headers=auth).json()
    ckpts = client.get(f"{API}/runs/{rid}/checkpoints", headers=auth).json()["data"]
    # Assert
    assert run["status"] == "succeeded", run["error"]
    assert run["spec"]["algorithm"] == parse_spec(spec).algorithm.model_dump(mode="json")
    assert metrics["rounds"] == list(range(TINY["rounds"] + 1))
    if own_metric is not None:
        assert len(metrics["metrics"][own_metric]) == TINY["rounds"] + 1
    full = [c["size"] for c in ckpts if c["kind"] == "full"]
    assert full, ckpts
    estimate = estimate_checkpoint_bytes(parse_spec(spec))
    assert full[-1] <= estimate <= 1.1 * full[-1], (full, estimate)
