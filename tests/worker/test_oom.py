"""A CUDA out-of-memory is recorded as such; the run goes back to the queue once, for a GPU with
more free memory than it had, and fails the second time.

No GPU here: the runner raises torch.cuda.OutOfMemoryError itself, the GPU's free memory at the
failure is given (worker.outcomes.gpu_memory), and the workers' rows say how much memory
their GPUs have free, as worker.capabilities writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from fedgen.resources import is_cuda_oom
from fedgen.spec import ExperimentSpec
from lab.config import Settings
from lab.dispatch import dispatch_pass
from lab.models import Run
from lab.repository import workers as workers_repo
from tests.support.factories import create_run, create_user
from tests.support.fakes import FakeRunner
from worker import outcomes
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome

API = "/api/v1"
GiB = 1024**3
TORCH_OOM = "CUDA out of memory. Tried to allocate 12.00 GiB (GPU 0; 80.00 GiB total capacity)"


def _oom_at(round_: int) -> Callable[..., Any]:
    """The fake runner, raising CUDA's out-of-memory error in round `round_`."""
    fake = FakeRunner()

    def run(spec: ExperimentSpec, sink: Any, **kw: Any) -> Any:
        def on_round(r: int) -> None:
            if r + 1 == round_:
                raise torch.cuda.OutOfMemoryError(TORCH_OOM)

        fake.on_round = on_round
        return fake(spec, sink, **kw)

    return run


def _gpu_worker(session: Session, name: str, free_gib: float) -> None:
    """A live one-slot worker of the gpu queue whose one GPU has `free_gib` free."""
    gpu = {"kind": "cuda", "index": "0", "name": "Test GPU", "memory_bytes": 80 * GiB}
    caps = {"slots": 1, "datasets": None, "devices": [{**gpu, "free_bytes": int(free_gib * GiB)}]}
    workers_repo.register(session, name, ["gpu"], 1, host=name.partition("@")[2], capabilities=caps)
    session.commit()


def _sent(session: Session, settings: Settings) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    dispatch_pass(session, lambda rid, q: out.append((rid, q)), settings, "test")
    return out


def _row(session: Session, rid: Any) -> Run:
    session.expire_all()
    row = session.get(Run, rid)
    assert row is not None
    return row


@pytest.mark.slow  # real runs
def test_out_of_memory_goes_back_once_to_a_bigger_gpu_then_fails(
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    client: TestClient,
    auth: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """First OOM (8 GiB free on g1): handed back, oom_count 1, the error says so; the dispatcher
    does not send it to a GPU with 6 GiB free (the run says why it waits), does to one with 40;
    the second OOM there fails the run with that reason."""
    user, _ = create_user(session, "carol")
    run = create_run(session, user, queue="gpu", device="cuda", rounds=3)
    monkeypatch.setattr(outcomes, "gpu_memory", lambda *_: (8 * GiB, 80 * GiB))

    out = execute_run(
        str(run.id), factory, runner=_oom_at(1), settings=settings, worker_name="g1@h1"
    )

    assert out == RunOutcome.HANDED_BACK
    row = _row(session, run.id)
    assert (row.oom_count, row.lease_token, row.current_round) == (1, None, 0)
    assert row.error is not None
    assert row.error.startswith(f"CUDA out of memory on cuda (8 GiB/80 GiB free): {TORCH_OOM}")
    assert "handed back to the queue for a GPU with more than 8 GiB free" in row.error
    assert row.info["oom"] == {
        "worker": "g1@h1",
        "device": "cuda",
        "free_bytes": 8 * GiB,
        "total_bytes": 80 * GiB,
    }
    assert row.cpu_s is not None
    assert row.cpu_s > 0

    _gpu_worker(session, "g1@h1", 8)  # the GPU it ran out on: no more free memory than before
    _gpu_worker(session, "g2@h2", 6)
    assert _sent(session, settings) == []
    body = client.get(f"{API}/runs/{run.id}", headers=auth).json()
    assert body["oom_count"] == 1
    assert body["waiting_reason"] == (
        "no live worker has a GPU with more than 8 GiB free "
        "(it ran out of CUDA memory on g1@h1 with 8 GiB free)"
    )

    _gpu_worker(session, "g3@h3", 40)
    assert _sent(session, settings) == [(str(run.id), "worker.g3@h3")]
    assert client.get(f"{API}/runs/{run.id}", headers=auth).json()["waiting_reason"] is None

    out = execute_run(
        str(run.id), factory, runner=_oom_at(2), settings=settings, worker_name="g3@h3"
    )

    assert out == RunOutcome.FAILED
    row = _row(session, run.id)
    assert (row.status, row.oom_count, row.current_round) == ("failed", 2, 1)
    assert row.error is not None
    assert row.error.startswith("CUDA out of memory on cuda (8 GiB/80 GiB free)")
    assert "out of CUDA memory 2 times, the last on g3@h3" in row.error


def test_what_counts_as_cuda_out_of_memory() -> None:
    """torch's error type, and a RuntimeError with CUDA's message (older torch, extensions);
    not any RuntimeError, nor a CPU allocation failure."""
    assert is_cuda_oom(torch.cuda.OutOfMemoryError("x"))
    assert is_cuda_oom(RuntimeError("CUDA out of memory. Tried to allocate 2.00 MiB"))
    assert not is_cuda_oom(RuntimeError("shape mismatch"))
    assert not is_cuda_oom(MemoryError("DefaultCPUAllocator: can't allocate memory"))
