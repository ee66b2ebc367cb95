"""FedAvgM's own tests: registered, bounded, FedAvg at β = 0 and η_s = 1, learns, resumes.

Run with the plugin installed (`pip install -e examples/plugins/fedavgm`) or from its
folder; either way the declaration is registered once for these tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the plugin, installed or not

from fedgen_fedavgm import DECL  # noqa: E402

from fedgen.algorithms import registry  # noqa: E402
from fedgen.events import MemorySink  # noqa: E402
from fedgen.runner import run  # noqa: E402
from fedgen.spec import ExperimentSpec, SpecError, parse_spec  # noqa: E402

TINY: dict[str, Any] = {
    "data": {"name": "synthetic", "synthetic_samples": 1000, "synthetic_classes": 5},
    "partition": {"num_users": 5, "alpha": 1.0, "min_samples": 10},
    "users_per_round": 3,
    "rounds": 6,
    "local_steps": 5,
    "batch_size": 16,
    "lr": 0.05,
    "checkpoint_every": 2,
}


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Iterator[None]:
    saved = registry.snapshot()  # loads the installed plugins: fedavgm when installed
    if registry.find_algorithm("fedavgm") is None:
        registry.register_algorithm(DECL)
    yield
    registry.restore(saved)


def _spec(**algorithm: Any) -> ExperimentSpec:
    return parse_spec({**TINY, "algorithm": {"name": "fedavgm", **algorithm}})


def _accuracies(spec: ExperimentSpec) -> list[float]:
    sink = MemorySink()
    run(spec, sink)
    return [e.metrics["test_acc"] for e in sink.events]


def test_spec_validates_with_bounds() -> None:
    spec = _spec(server_momentum=0.5)
    assert spec.algorithm.model_dump() == {
        "name": "fedavgm",
        "server_momentum": 0.5,
        "server_lr": 0.1,
    }
    with pytest.raises(SpecError, match=r"algorithm\.fedavgm\.server_momentum: .*less than 1"):
        _spec(server_momentum=1.0)
    with pytest.raises(SpecError, match=r"algorithm\.fedavgm\.server_lr: .*greater than 0"):
        _spec(server_lr=0.0)
    assert parse_spec({**TINY, "algorithm": {"name": "fedavgm"}, "share": "predictor"})


def test_without_momentum_it_is_fedavg() -> None:
    fedavgm = _accuracies(_spec(server_momentum=0.0, server_lr=1.0))
    fedavg = _accuracies(parse_spec({**TINY, "algorithm": {"name": "fedavg"}}))
    # w - (w - avg) is avg up to float rounding.
    assert fedavgm == pytest.approx(fedavg, abs=1e-3)


def test_momentum_learns_and_differs_from_fedavg() -> None:
    sink = MemorySink()
    run(_spec(server_momentum=0.5, server_lr=0.5), sink)
    accs = [e.metrics["test_acc"] for e in sink.events]
    assert accs[-1] > 0.5  # chance is 0.2
    assert sink.events[-1].metrics["server_velocity_norm"] > 0


def test_resume_equals_uninterrupted() -> None:
    spec = _spec(server_momentum=0.5, server_lr=0.5)
    full = MemorySink()
    run(spec, full)
    ckpt = next(c for e in full.events if e.round == 2 for c in e.checkpoints if c.kind == "full")
    resumed = MemorySink()
    run(spec, resumed, resume_from=ckpt.data)
    keys = ("test_acc", "test_loss", "server_velocity_norm")
    for a, b in zip(full.events[3:], resumed.events, strict=True):
        assert [a.metrics[k] for k in keys] == [b.metrics[k] for k in keys]
