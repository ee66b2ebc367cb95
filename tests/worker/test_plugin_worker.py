"""A plugin algorithm end to end: submitted through the API, run by a real worker process, on
PostgreSQL and Redis. examples/plugins/lrdecay is pip-installed into a folder of this test
(`tests.support.plugin_site`) that both the API (this process) and the worker have on their path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from tests.support.factories import create_user
from tests.support.needs import needs
from tests.support.plugin_site import ROOT, install_example, plugins_on_path, pythonpath
from tests.support.postgres import truncate
from tests.support.workers import redis_ok, until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
API = "/api/v1"
REDIS = "redis://127.0.0.1:6379/0"
SPEC: dict[str, Any] = {
    "data": {"name": "synthetic", "synthetic_samples": 600, "synthetic_classes": 4},
    "partition": {"num_users": 4, "alpha": 1.0},
    "users_per_round": 2,
    "rounds": 3,
    "local_steps": 3,
    "batch_size": 16,
    "checkpoint_every": 2,
    "algorithm": {"name": "fedavg-decay", "server_lr": 1.0, "server_lr_decay": 0.5},
}


@pytest.mark.timeout(240)
def test_plugin_algorithm_runs_through_api_and_worker(pg_url: str, tmp_path: Path) -> None:
    # Prepare
    needs(redis_ok(), "Redis at 127.0.0.1:6379")
    site = install_example(tmp_path / "lrdecay")
    prefix = f"p{uuid.uuid4().hex[:8]}-"
    home = tmp_path / "home"
    settings = Settings(database_url=pg_url, broker_url=REDIS, home=home, queue_prefix=prefix)
    engine = make_engine(pg_url)
    factory = make_sessionmaker(engine)
    with factory() as session:
        _, token = create_user(session, f"plugin-{prefix}")
    auth = {"Authorization": f"Bearer {token}"}
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "FEDGEN_DATABASE_URL": pg_url,
        "FEDGEN_BROKER_URL": REDIS,
        "FEDGEN_HOME": str(home),
        "FEDGEN_QUEUE_PREFIX": prefix,
        "FEDGEN_REAPER_S": "0.5",
        "PYTHONPATH": pythonpath(site),
        "OMP_NUM_THREADS": "1",
    }
    argv = [
        sys.executable,
        "-m",
        "worker",
        "--slots",
        "1",
        "--queues",
        "cpu",
        "--loglevel",
        "WARNING",
    ]
    with log.open("wb") as out:
        worker = subprocess.Popen(
            argv,
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        with plugins_on_path(site), TestClient(create_app(settings, session_factory=factory)) as c:
            # Execute
            made = c.post(f"{API}/runs", json={"spec": SPEC}, headers=auth)
            assert made.status_code == 202, made.text
            rid = made.json()["id"]
            run = until(
                lambda: (
                    (r := c.get(f"{API}/runs/{rid}", headers=auth).json())["status"]
                    in ("succeeded", "failed")
                    and r
                ),
                180,
                "the run to end",
            )
            info = c.get(f"{API}/runs/{rid}/info", headers=auth).json()
            metrics = c.get(f"{API}/runs/{rid}/metrics", headers=auth).json()
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(30)
        truncate(engine)  # the session's schema is shared: leave it empty
        engine.dispose()
    # Assert
    assert run["status"] == "succeeded", (run["error"], log.read_text()[-3000:])
    assert run["spec"]["algorithm"] == SPEC["algorithm"]
    assert run["versions"]["plugin:fedavg-decay"] == "fedgen-lrdecay 0.1.0"  # the API's
    assert info["versions"]["plugin:fedavg-decay"] == "fedgen-lrdecay 0.1.0"  # the worker's
    assert metrics["rounds"] == list(range(SPEC["rounds"] + 1))
    assert len(metrics["metrics"]["server_lr"]) == SPEC["rounds"] + 1  # the plugin's own
    assert "plugins loaded: algorithm fedavg-decay (fedgen-lrdecay 0.1.0)" in log.read_text()
