"""The round loop: events, checkpoints, resume equals uninterrupted, cancel, FedProx(mu=0) == FedAvg."""

from __future__ import annotations

import io

import pytest
import torch

from fedgen.events import MemorySink
from fedgen.runner import RunError, run
from tests.support.needs import needs
from tests.support.specs import tiny_spec

pytestmark = pytest.mark.slow  # the round loop on real (tiny) training

DETERMINISTIC = (
    "test_acc",
    "test_loss",
    "train_loss",
    "user_acc_mean",
    "user_acc_min",
    "lr",
    "bytes_up",
)


def _curve(sink: MemorySink, start: int = 0) -> list[tuple[int, tuple[float, ...]]]:
    return [
        (e.round, tuple(e.metrics.get(k, -1.0) for k in DETERMINISTIC))
        for e in sink.events
        if e.round >= start
    ]


def test_events_round_zero_and_checkpoints() -> None:
    """Round 0 is the initial model; full checkpoints at every `checkpoint_every` and at the end."""
    sink = MemorySink()
    summary = run(tiny_spec(), sink)
    assert [e.round for e in sink.events] == [0, 1, 2, 3, 4]
    kinds = {e.round: sorted(c.kind for c in e.checkpoints) for e in sink.events}
    assert kinds == {0: [], 1: [], 2: ["full"], 3: [], 4: ["full", "model"]}
    assert summary.status == "completed"
    assert summary.rounds_done == 4
    assert sink.info is not None
    assert len(sink.info.label_histogram) == 5
    last = sink.events[-1]
    assert sum(u.selected for u in last.users) == 3
    assert all(u.train_ms is not None for u in last.users if u.selected)
    assert last.metrics["bytes_up"] == last.metrics["bytes_down"] > 0


def test_checkpoint_is_weights_only_safe() -> None:
    """Checkpoints load with torch.load(weights_only=True)."""
    sink = MemorySink()
    run(tiny_spec(rounds=2, checkpoint_every=1), sink)
    full = next(c for e in sink.events for c in e.checkpoints if c.kind == "full")
    state = torch.load(io.BytesIO(full.data), weights_only=True)
    assert state["round"] == 1
    assert "algorithm" in state
    assert len(full.sha256) == 64


def test_resume_equals_uninterrupted() -> None:
    """A run resumed from round 2 reports exactly the metrics of the uninterrupted run."""
    spec = tiny_spec(rounds=5)
    whole = MemorySink()
    run(spec, whole)
    ckpt = next(c for e in whole.events for c in e.checkpoints if c.kind == "full" and c.round == 2)
    resumed = MemorySink()
    summary = run(spec, resumed, resume_from=ckpt.data)
    assert resumed.info is not None
    assert resumed.info.start_round == 3
    assert _curve(resumed) == _curve(whole, start=3)
    # Official profile (before_training): the final figure is round R-1's, as the official
    # code never evaluates the model after the last aggregation.
    assert summary.final_round == 4
    assert summary.final_acc == whole.events[4].metrics["test_acc"]


def test_same_seed_same_curve_other_seed_differs() -> None:
    """CPU runs are bit-for-bit reproducible; the seed matters."""
    a, b, c = MemorySink(), MemorySink(), MemorySink()
    run(tiny_spec(), a)
    run(tiny_spec(), b)
    run(tiny_spec(seed=1), c)
    assert _curve(a) == _curve(b)
    assert _curve(a) != _curve(c)


def test_resume_refuses_foreign_checkpoint() -> None:
    """A checkpoint of another spec is refused with a clear error."""
    sink = MemorySink()
    run(tiny_spec(rounds=2), sink)
    ckpt = next(c for e in sink.events for c in e.checkpoints if c.kind == "full")
    with pytest.raises(RunError, match="different spec"):
        run(tiny_spec(rounds=2, lr=0.1), MemorySink(), resume_from=ckpt.data)


def test_should_stop_between_rounds() -> None:
    """Cooperative cancel: the run stops after the round in progress."""
    sink = MemorySink()
    summary = run(tiny_spec(rounds=10), sink, should_stop=lambda: len(sink.events) >= 3)
    assert summary.status == "stopped"
    assert [e.round for e in sink.events] == [0, 1, 2]


def test_fedprox_mu_zero_equals_fedavg() -> None:
    """FedProx with mu=0 is FedAvg, bit for bit."""
    avg, prox = MemorySink(), MemorySink()
    run(tiny_spec(), avg)
    run(tiny_spec(algorithm={"name": "fedprox", "mu": 0.0}), prox)
    assert _curve(avg) == _curve(prox)
    differs = MemorySink()
    run(tiny_spec(algorithm={"name": "fedprox", "mu": 1.0}), differs)
    assert _curve(differs) != _curve(avg)


@pytest.mark.parametrize("bn", ["local", "average"])
@pytest.mark.parametrize("protocol", ["per_user", "global"])
def test_fedavg_learns_under_every_protocol(bn: str, protocol: str) -> None:
    """FedAvg gets well above chance (20% for 5 classes) with either BN mode and test protocol."""
    sink = MemorySink()
    spec = tiny_spec(rounds=6, model={"bn_buffers": bn}, partition={"test_protocol": protocol})
    summary = run(spec, sink)
    assert summary.final_acc > 0.6
    assert all(torch.isfinite(torch.tensor(e.metrics["test_loss"])) for e in sink.events)


def test_small_users_do_not_crash() -> None:
    """Users with fewer samples than a batch train on what they have (official code crashes)."""
    spec = tiny_spec(batch_size=512, partition={"alpha": 0.05, "min_samples": 2}, users_per_round=5)
    summary = run(spec, MemorySink())
    assert summary.rounds_done == 4


def test_full_participation() -> None:
    """users_per_round == num_users works."""
    assert run(tiny_spec(users_per_round=5), MemorySink()).rounds_done == 4


def test_cuda_runs_on_gpu_or_is_a_clear_error() -> None:
    """On a GPU every tensor stays there and the run learns; without one the error names the problem."""
    if torch.cuda.is_available():
        sink = MemorySink()
        summary = run(tiny_spec(device="cuda", rounds=3), sink)
        assert summary.final_acc > 0.5
        assert sink.info is not None
        assert sink.info.device.startswith("cuda")
        return
    with pytest.raises(RunError, match="no CUDA device"):
        run(tiny_spec(device="cuda"), MemorySink())


@pytest.mark.slow
def test_fedavg_real_fashion_mnist_above_chance() -> None:
    """A short real run on Fashion-MNIST gets well above 10% chance."""
    from fedgen.data.files import DEBIAN_FASHION_MNIST

    needs(DEBIAN_FASHION_MNIST.exists(), "Debian's dataset-fashion-mnist")
    spec = tiny_spec(
        data={"name": "fashion-mnist"},
        partition={"num_users": 20, "alpha": 0.1, "sampling_ratio": 0.5},
        users_per_round=10,
        rounds=10,
        local_steps=20,
        batch_size=32,
        lr=0.01,
        checkpoint_every=0,
        # The round's 10 clients as one stacked computation (what new runs get on 2+ CPU
        # threads): about half the wall time of one client after another, same curve.
        execution="batched",
    )
    summary = run(spec, MemorySink())
    assert summary.best_acc > 0.5


def test_lr_schedule_per_round_and_per_user() -> None:
    """per_round: lr0*decay^(r-1) for everyone; per_user (official): decay by the user's last trained round."""
    from fedgen.runner import Simulation

    # Prepare
    per_round = Simulation(tiny_spec(lr=0.1, lr_decay=0.5, fidelity={"lr_schedule": "per_round"}))
    per_user = Simulation(tiny_spec(lr=0.1, lr_decay=0.5, fidelity={"lr_schedule": "per_user"}))
    # Execute
    lrs_round = [per_round.round(r).metrics["lr"] for r in (1, 2, 3)]
    for r in (1, 2, 3):
        per_user.round(r)
    # Assert
    assert lrs_round == pytest.approx([0.1, 0.05, 0.025])
    # A user never selected still trains at lr0; one last trained in round r (0-based t=r-1) at lr0*0.5^t.
    clock = per_user.lr_clock
    assert all(t in (0, 1, 2) for t in clock)
    assert [per_user.client_lr(k, 4) for k in range(5)] == pytest.approx(
        [0.1 * 0.5**t for t in clock]
    )


def test_official_fidelity_details() -> None:
    """EMNIST's official minimum is 260 samples per user; FedEnsemble evaluates after aggregation."""
    from fedgen.data.partition import official_min_samples
    from fedgen.fidelity import resolve

    assert official_min_samples("emnist-letters", 26) == 260
    assert official_min_samples("mnist", 10) == 10
    assert resolve(tiny_spec(algorithm={"name": "fedensemble"})).eval_timing == "after_aggregation"
    assert resolve(tiny_spec()).eval_timing == "before_training"
    paper_fedgen = tiny_spec(algorithm={"name": "fedgen"}, fidelity={"profile": "paper"})
    assert resolve(paper_fedgen).client_teacher_batch_ratio is False
