"""FedEnsemble, FedDistill, FedDistill+, FedDF (and FedGen/FedAvg under partial sharing)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from fedgen.algorithms import ALGORITHMS, ClientUpload
from fedgen.algorithms.feddistill import FedDistill
from fedgen.events import MemorySink
from fedgen.models.cnn import PREDICTOR_PREFIX
from fedgen.runner import Simulation, run
from tests.fedgen.conftest import tiny_spec

BASELINES: dict[str, dict[str, Any]] = {
    "fedensemble": {"name": "fedensemble"},
    "feddistill": {"name": "feddistill"},
    "feddistill-plus": {"name": "feddistill-plus"},
    "feddf": {"name": "feddf", "proxy_size": 200, "distill_steps": 10, "distill_batch_size": 32},
}
# Personalised FedDistill models learn from their own few samples only.
MIN_ACC = {"fedensemble": 0.6, "feddistill": 0.4, "feddistill-plus": 0.6, "feddf": 0.6}
KEYS = ("test_acc", "test_loss", "train_loss", "bytes_up")


def _spec(algo: dict[str, Any], **kw: Any) -> Any:
    return tiny_spec(**{"algorithm": algo, "rounds": 6, **kw})


def test_all_algorithms_registered() -> None:
    assert set(ALGORITHMS) >= {"fedensemble", "feddistill", "feddistill-plus", "feddf", "fedgen"}


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_learns(name: str) -> None:
    sink = MemorySink()
    run(_spec(BASELINES[name]), sink)
    assert sink.events[-1].metrics["test_acc"] > MIN_ACC[name]  # chance is 0.2
    assert all(math.isfinite(e.metrics["train_loss"]) for e in sink.events[1:])


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_resume_equals_uninterrupted(name: str) -> None:
    spec = _spec(BASELINES[name], rounds=4, checkpoint_every=2)
    full = MemorySink()
    run(spec, full)
    ckpt = next(c for e in full.events if e.round == 2 for c in e.checkpoints if c.kind == "full")
    resumed = MemorySink()
    run(spec, resumed, resume_from=ckpt.data)
    for a, b in zip(full.events[3:], resumed.events, strict=True):
        assert [a.metrics[k] for k in KEYS] == [b.metrics[k] for k in KEYS]


@pytest.mark.parametrize("name", [*sorted(BASELINES), "fedgen"])
def test_full_participation(name: str) -> None:
    algo = BASELINES.get(name, {"name": name})
    sink = MemorySink()
    run(_spec(algo, users_per_round=5, rounds=2), sink)
    assert sum(u.selected for u in sink.events[-1].users) == 5


def test_feddistill_trackers_are_detached_and_cumulative() -> None:
    sim = Simulation(_spec(BASELINES["feddistill"]))
    algo = sim.algo
    assert isinstance(algo, FedDistill)
    user = sim.data.users[0]
    up = algo.client_update(user, 1, 0.05)
    first = float(algo.tracker_count[0].sum())
    algo.client_update(user, 2, 0.05)
    assert float(algo.tracker_count[0].sum()) == 2 * first - algo.data.num_classes
    assert not algo.tracker_sum.requires_grad
    assert up.extras["label_logits"].grad_fn is None
    assert up.params == {}  # FedDistill shares no parameters


def test_fedensemble_round0_equals_global_model() -> None:
    """Before training every user holds the initial model: the ensemble predicts like it."""
    a = MemorySink()
    run(_spec(BASELINES["fedensemble"], rounds=1), a)
    b = MemorySink()
    run(_spec({"name": "fedavg"}, rounds=1), b)
    assert a.events[0].metrics["test_acc"] == pytest.approx(b.events[0].metrics["test_acc"])


def _uploads(name: str, share: str, bn: str) -> tuple[list[ClientUpload], float, set[str]]:
    algo = BASELINES.get(name, {"name": name})
    sim = Simulation(_spec(algo, share=share, model={"bn_buffers": bn}))
    seen: list[ClientUpload] = []
    inner = sim.algo.client_update

    def spy(user: Any, server_round: int, lr: float) -> ClientUpload:
        up = inner(user, server_round, lr)
        seen.append(up)
        return up

    sim.algo.client_update = spy  # type: ignore[method-assign]
    sim.initial_event()
    bytes_up = sum(sim.round(r).metrics["bytes_up"] for r in (1, 2))
    features = {k for k in sim.algo.global_state() if not k.startswith(PREDICTOR_PREFIX)}
    return seen, bytes_up, features


@pytest.mark.parametrize("name", ["fedavg", "feddistill-plus", "feddf", "fedgen"])
@pytest.mark.parametrize("bn", ["local", "average"])
def test_predictor_sharing_never_uploads_the_feature_extractor(name: str, bn: str) -> None:
    shared, bytes_pred, features = _uploads(name, "predictor", bn)
    assert shared
    for up in shared:
        assert up.params
        assert all(k.startswith(PREDICTOR_PREFIX) for k in up.params)
        assert not up.buffers
        names = set(up.params) | set(up.buffers) | set(up.extras)
        assert not names & features
        shapes = {tuple(t.shape) for t in [*up.params.values(), *up.extras.values()]}
        assert (32, 784) not in shapes  # the extractor's last layer
    _, bytes_all, _ = _uploads(name, "all", bn)
    assert bytes_pred < 0.1 * bytes_all


def test_predictor_sharing_keeps_extractors_personal() -> None:
    sim = Simulation(_spec({"name": "fedavg"}, share="predictor", users_per_round=5))
    sim.initial_event()
    sim.round(1)
    w0 = sim.algo.fed.user_local[0]["features.7.weight"]
    w1 = sim.algo.fed.user_local[1]["features.7.weight"]
    assert not torch.equal(w0, w1)
