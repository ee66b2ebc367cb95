"""FedEnsemble, FedDistill, FedDistill+, FedDF (and FedGen/FedAvg under partial sharing)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload
from fedgen.algorithms.feddistill import FedDistill
from fedgen.algorithms.registry import builtin_algorithms
from fedgen.events import MemorySink
from fedgen.models.cnn import PREDICTOR_PREFIX
from fedgen.runner import Simulation, run
from fedgen.spec import SpecError
from tests.support.specs import tiny_spec

pytestmark = pytest.mark.slow  # every algorithm learns and resumes: real training

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
    decls = builtin_algorithms()
    assert {d.name for d in decls} >= {*BASELINES, "fedgen"}
    assert all(issubclass(d.load_class(), Algorithm) for d in decls)


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


def _feddf_round_with_scripted_validation(
    accs: list[float], patience: int, min_delta: float = 0.0
) -> tuple[dict[str, float], list[dict[str, torch.Tensor]], dict[str, torch.Tensor]]:
    """One FedDF round whose validation checks return `accs` in turn.

    Returns the round's metrics, the shared parameters each check saw, and the
    global model's shared parameters after the round.
    """
    algo_spec = {
        **BASELINES["feddf"],
        "distill_steps": 10,
        "val_size": 50,
        "val_every": 2,
        "patience": patience,
        "min_delta": min_delta,
    }
    sim = Simulation(_spec(algo_spec))
    algo = sim.algo
    seen: list[dict[str, torch.Tensor]] = []
    script = iter(accs)

    def scripted(shared: dict[str, torch.Tensor]) -> float:
        seen.append({k: v.clone() for k, v in shared.items()})
        return next(script)

    algo._val_acc = scripted  # type: ignore[attr-defined]
    sim.initial_event()
    metrics = sim.round(1).metrics
    state = algo.global_state()
    return metrics, seen, {k: state[k] for k in seen[0]}


def test_feddf_early_stopping_keeps_the_best_validated_step() -> None:
    # Checks at steps 0, 2, 4, 6, 8, 10; the best is at step 4.
    metrics, seen, kept = _feddf_round_with_scripted_validation(
        [0.5, 0.4, 0.7, 0.6, 0.65, 0.55], patience=0
    )
    assert len(seen) == 6
    assert metrics["distill_best_step"] == 4
    assert metrics["distill_steps_run"] == 10
    assert metrics["val_acc_start"] == 0.5
    assert metrics["val_acc_best"] == 0.7
    assert all(torch.equal(kept[k], seen[2][k]) for k in kept)
    assert not all(torch.equal(seen[0][k], seen[2][k]) for k in kept)  # distillation moved it


def test_feddf_early_stopping_keeps_the_average_when_distillation_never_helps() -> None:
    metrics, seen, kept = _feddf_round_with_scripted_validation(
        [0.5, 0.4, 0.45, 0.3, 0.2, 0.1], patience=0
    )
    assert metrics["distill_best_step"] == 0
    assert all(torch.equal(kept[k], seen[0][k]) for k in kept)  # the averaged model


def test_feddf_early_stopping_keeps_the_first_of_equal_checks() -> None:
    # Only a strict gain counts: a tie with the plain average does not replace it.
    metrics, seen, kept = _feddf_round_with_scripted_validation(
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5], patience=0
    )
    assert metrics["distill_best_step"] == 0
    assert all(torch.equal(kept[k], seen[0][k]) for k in kept)


def test_feddf_early_stopping_stops_after_patience_checks() -> None:
    # Best at step 2; checks at 4 and 6 do not improve: patience 2 stops at step 6.
    metrics, seen, kept = _feddf_round_with_scripted_validation(
        [0.5, 0.6, 0.55, 0.58, 0.9, 0.9], patience=2
    )
    assert len(seen) == 4
    assert metrics["distill_steps_run"] == 6
    assert metrics["distill_best_step"] == 2
    assert all(torch.equal(kept[k], seen[1][k]) for k in kept)


def test_feddf_min_delta_ignores_gains_below_the_margin() -> None:
    # min_delta 1 point: +0.8 at step 2 is noise, +1.5 at step 6 counts, then +0.5 does not.
    accs = [0.5, 0.508, 0.4, 0.515, 0.52, 0.3]
    metrics, seen, kept = _feddf_round_with_scripted_validation(accs, patience=0, min_delta=1.0)
    assert len(seen) == 6
    assert metrics["distill_best_step"] == 6
    assert metrics["val_acc_best"] == 0.515
    assert all(torch.equal(kept[k], seen[3][k]) for k in kept)
    # Without the margin the first gain is kept and later checks are measured against it.
    metrics, _, _ = _feddf_round_with_scripted_validation(accs, patience=0, min_delta=0.0)
    assert metrics["distill_best_step"] == 8


def test_feddf_min_delta_counts_small_gains_towards_patience() -> None:
    # Gains of 0.5 point are below the 1-point margin: two of them exhaust patience 2.
    metrics, seen, kept = _feddf_round_with_scripted_validation(
        [0.5, 0.505, 0.51, 0.9, 0.9, 0.9], patience=2, min_delta=1.0
    )
    assert len(seen) == 3
    assert metrics["distill_steps_run"] == 4
    assert metrics["distill_best_step"] == 0
    assert all(torch.equal(kept[k], seen[0][k]) for k in kept)


def test_feddf_without_validation_keeps_the_last_step() -> None:
    sim = Simulation(_spec({**BASELINES["feddf"], "val_size": 0}))
    sim.initial_event()
    metrics = sim.round(1).metrics
    assert metrics["distill_steps_run"] == BASELINES["feddf"]["distill_steps"]
    assert "distill_best_step" not in metrics
    assert "val_acc_start" not in metrics


def test_feddf_validation_split_is_labelled_and_disjoint_from_the_proxy() -> None:
    sim = Simulation(_spec({**BASELINES["feddf"], "val_size": 50}))
    algo = sim.algo
    held = sim.data.held_out_idx

    def rows(x: torch.Tensor, y: torch.Tensor | None = None) -> set[tuple[float, ...]]:
        return {
            (*r.flatten().tolist(), *([] if y is None else [float(y[i])])) for i, r in enumerate(x)
        }

    assert algo.val_x.shape[0] == 50 == algo.val_y.shape[0]  # type: ignore[attr-defined]
    val = rows(algo.val_x, algo.val_y)  # type: ignore[attr-defined]
    # Every (image, label) pair is a held-out training sample with its true label ...
    assert val <= rows(sim.data.train_x[held], sim.data.train_y[held])
    # ... and no validation image is in the proxy.
    assert not rows(algo.val_x) & rows(algo.proxy_x)  # type: ignore[attr-defined]


def test_feddf_validation_needs_held_out_samples_left() -> None:
    sim = Simulation(_spec({**BASELINES["feddf"], "val_size": 0}))
    held = int(sim.data.held_out_idx.numel())
    with pytest.raises(ValueError, match="val_size"):
        Simulation(_spec({**BASELINES["feddf"], "proxy_size": held, "val_size": 10}))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("val_size", -1),
        ("val_size", 200_001),
        ("val_every", 0),
        ("patience", -1),
        ("min_delta", -0.1),
        ("min_delta", 100.5),
        ("distill_bn", "batch"),
    ],
)
def test_feddf_early_stopping_fields_are_bounded(field: str, value: Any) -> None:
    with pytest.raises(SpecError, match=field):
        _spec({**BASELINES["feddf"], field: value})


def _feddf_after_one_round(distill_bn: str) -> tuple[dict[str, torch.Tensor], list[Any]]:
    spec = _spec({**BASELINES["feddf"], "val_size": 0, "distill_bn": distill_bn})
    sim = Simulation(spec)
    sim.initial_event()
    sim.round(1)
    algo = sim.algo
    return algo.global_state(), [dict(d) for d in algo.fed.user_local]


def test_feddf_distill_bn_mode_changes_the_student_not_the_users_statistics() -> None:
    g_eval, local_eval = _feddf_after_one_round("eval")
    g_train, local_train = _feddf_after_one_round("train")
    # Same uploads, same proxy batches: only the student's BN normalisation differs.
    assert not torch.equal(g_eval["features.0.weight"], g_train["features.0.weight"])
    for a, b in zip(local_eval, local_train, strict=True):
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a)  # users' BN statistics untouched
