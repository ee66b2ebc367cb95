"""A real lab server for dashboard tests: the FastAPI app on a loopback port, SQLite in tmp.

Runs are submitted through the API and executed by the worker's real `execute_run`
with a scripted runner (fast, deterministic rounds) instead of the simulator.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import uvicorn

from api.config import Settings
from api.db import session_scope
from api.main import create_app
from api.repository import users as users_repo
from fedgen.events import Checkpoint, RoundEvent, RunInfo, RunSummary, UserRoundMetrics
from fedgen.spec import ExperimentSpec
from worker.execution import execute_run


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
    settings = Settings(home=home, database_url=f"sqlite:///{home / 'lab.db'}")
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


def _generator_bytes(num_classes: int, round_: int) -> bytes:
    """A real (tiny, untrained) generator checkpoint, as the FedGen runner writes them."""
    from fedgen.models.generator import GeneratorConfig, build_generator, generator_checkpoint

    cfg = GeneratorConfig(noise_dim=4, hidden_dim=16, latent_dim=8, num_classes=num_classes)
    return generator_checkpoint(build_generator(cfg, seed=round_), round_)


def scripted_runner(
    spec: ExperimentSpec, sink: Any, resume_from: bytes | None = None, should_stop: Any = None
) -> RunSummary:
    """Emit plausible rounds for `spec` (FedGen learns faster, seeds add noise) through `sink`."""
    del resume_from
    rng = np.random.default_rng(spec.seed)
    users, classes = spec.partition.num_users, spec.data.synthetic_classes
    hist = rng.integers(0, 30, size=(users, classes)).tolist()
    sink.on_start(
        RunInfo(
            spec_hash=spec.spec_hash(), partition_fingerprint=f"fp-{spec.partition.alpha}",
            num_users=users, num_classes=classes, train_sizes=[sum(h) for h in hist],
            test_sizes=[10] * users, label_histogram=hist, model_params=1234, device="cpu",
            fidelity={"profile": spec.fidelity.profile}, start_round=0, versions={"fedgen": "test"},
        )
    )  # fmt: skip
    fedgen = spec.algorithm.name == "fedgen"
    speed = 0.35 if fedgen else 0.25
    accs: list[float] = []
    for r in range(spec.rounds + 1):
        acc = float(0.1 + 0.8 * (1 - np.exp(-speed * r)) + rng.normal(0, 0.01))
        accs.append(acc)
        user_accs = np.clip(acc + rng.normal(0, 0.05, users), 0, 1)
        metrics = {
            "test_acc": acc, "test_loss": 2.3 * (1 - acc), "user_acc_mean": float(user_accs.mean()),
            "user_acc_min": float(user_accs.min()), "lr": spec.lr, "bytes_down": 1e5, "bytes_up": 1e5,
            "train_loss": 2.0 * (1 - acc), "time_user_ms": 58.0 if fedgen else 48.0,
            "time_train_ms": 100.0, "time_server_ms": 20.0, "time_eval_ms": 10.0, "time_total_ms": 140.0,
        }  # fmt: skip
        if fedgen:
            metrics |= {"gen_teacher_loss": 1.0 / (r + 1), "gen_diversity_loss": 0.5,
                        "gen_ensemble_acc": acc, "gen_train_ms": 15.0}  # fmt: skip
        ckpts = (
            [Checkpoint("generator", r, _generator_bytes(classes, r))] if fedgen and r > 0 else []
        )
        sink.on_round(
            RoundEvent(
                r, metrics,
                [UserRoundMetrics(u, float(user_accs[u]), 1.0, 10, u < spec.users_per_round, 5.0, 1.0)
                 for u in range(users)],
                ckpts,
            )
        )  # fmt: skip
        if should_stop is not None and should_stop():
            break
    top = sorted(accs, reverse=True)[:5]
    summary = RunSummary(
        "completed", len(accs) - 1, accs[-1], max(accs), float(np.mean(top)), float(np.std(top)),
        "top5", float(np.mean(top)), 0.1,
    )  # fmt: skip
    sink.on_finish(summary)
    return summary


def tiny_spec(**changes: Any) -> dict[str, Any]:
    """A tiny synthetic spec (3 users, 2 per round, 3 rounds, 2 local steps)."""
    spec: dict[str, Any] = {
        "data": {"name": "synthetic", "synthetic_samples": 200},
        "partition": {"num_users": 3, "alpha": 0.1},
        "algorithm": {"name": "fedavg"},
        "rounds": 3, "users_per_round": 2, "local_steps": 2, "batch_size": 16,
        "eval_batch_size": 256, "checkpoint_every": 0,
    }  # fmt: skip
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
                run_id, lab.app.state.sessionmaker, runner=scripted_runner, settings=lab.settings,
                worker_name="test-worker",
            )  # fmt: skip
            assert status == "succeeded", status
        queued = c.post("/runs", json={"spec": tiny_spec(seed=7)}).raise_for_status().json()
    return {"sweep_id": sweep["id"], "run_ids": sweep["run_ids"], "queued_id": queued["id"]}
