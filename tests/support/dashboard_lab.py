"""A real lab server for dashboard tests: the FastAPI app on a loopback port, SQLite in tmp.

Runs are submitted through the API and executed by the worker's real `execute_run`
with the shared fake runner (tests/support/fakes.py: fast, deterministic rounds) instead of the
simulator.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from api.main import create_app
from lab.config import Settings
from lab.db import session_scope
from lab.repository import users as users_repo
from tests.support.fakes import FakeRunner
from worker.claimed_run import execute_run


def free_port() -> int:
    """An unused loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    """A running lab server and how to reach it."""

    url: str
    token: str
    settings: Settings
    app: Any
    server: uvicorn.Server
    thread: threading.Thread

    def client(self) -> httpx.Client:
        """An authenticated httpx client for seeding."""
        return httpx.Client(
            base_url=self.url + "/api/v1",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_lab(home: Path, *, enqueue: Any = None, user: str = "alice") -> Lab:
    """Start the real API on a free loopback port with a fresh SQLite database under `home`."""
    # The page tests try bad tokens on purpose, all from 127.0.0.1: a generous failure limit.
    # FakeRunner writes a generator checkpoint every round of a FedGen run, which the default
    # retention would thin out; the pages' tests pick among all of them (retention has its own
    # test, tests/dashboard/test_checkpoint_retention.py, with its own rule).
    settings = Settings(
        home=home,
        database_url=f"sqlite:///{home / 'lab.db'}",
        auth_fail_rate="10000/minute",
        keep_generator_checkpoints="all",
    )
    app = create_app(
        settings, enqueue=enqueue or (lambda _run_id, _device: None), broker_check=lambda: None
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API did not start")
        time.sleep(0.05)
    with session_scope(app.state.sessionmaker) as s:
        _, token = users_repo.create_user(s, user, is_admin=True)
    return Lab(f"http://127.0.0.1:{port}", token, settings, app, server, thread)


def tiny_spec(**changes: Any) -> dict[str, Any]:
    """A tiny synthetic spec (3 users, 2 per round, 3 rounds, 2 local steps)."""
    spec: dict[str, Any] = {
        "data": {"name": "synthetic", "synthetic_samples": 200},
        "partition": {"num_users": 3, "alpha": 0.1},
        "algorithm": {"name": "fedavg"},
        "rounds": 3,
        "users_per_round": 2,
        "local_steps": 2,
        "batch_size": 16,
        "eval_batch_size": 256,
        "checkpoint_every": 0,
    }
    spec.update(changes)
    return spec


def seed_lab(lab: Lab) -> dict[str, Any]:
    """A finished sweep (fedavg, fedgen x seeds 0, 1; 6 rounds) and one queued run."""
    with lab.client() as c:
        base = tiny_spec(rounds=6, partition={"num_users": 4, "alpha": 0.1})
        grid = {"algorithm": ["fedavg", "fedgen"], "seed": [0, 1]}
        sweep = (
            c.post("/sweeps", json={"name": "demo", "base": base, "grid": grid})
            .raise_for_status()
            .json()
        )
        for run_id in sweep["run_ids"]:
            status = execute_run(
                run_id,
                lab.app.state.sessionmaker,
                runner=FakeRunner(),
                settings=lab.settings,
                worker_name="test-worker",
            )
            assert status == "succeeded", status
        queued = c.post("/runs", json={"spec": tiny_spec(seed=7)}).raise_for_status().json()
    return {"sweep_id": sweep["id"], "run_ids": sweep["run_ids"], "queued_id": queued["id"]}
