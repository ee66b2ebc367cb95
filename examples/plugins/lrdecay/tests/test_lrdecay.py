"""FedAvg-decay's own tests: registered, bounded, FedAvg at η_s = 1 and γ = 1, learns, resumes.

Run with the plugin installed (`pip install -e examples/plugins/lrdecay`) or from its
folder; either way the declaration is registered once for these tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the plugin, installed or not

from fedgen_lrdecay import DECL  # noqa: E402

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
    saved = registry.snapshot()  # loads the installed plugins: fedavg-decay when installed
    if registry.find_algorithm("fedavg-decay") is None:
        registry.register_algorithm(DECL)
    yield
    registry.restore(saved)


def _spec(**algorithm: Any) -> ExperimentSpec:
    return parse_spec({**TINY, "algorithm": {"name": "fedavg-decay", **algorithm}})


def _accuracies(spec: ExperimentSpec) -> list[float]:
    sink = MemorySink()
    run(spec, sink)
    return [e.metrics["test_acc"] for e in sink.events]


def test_spec_validates_with_bounds() -> None:
    spec = _spec(server_lr_decay=0.5)
    assert spec.algorithm.model_dump() == {
        "name": "fedavg-decay",
        "server_lr": 1.0,
        "server_lr_decay": 0.5,
    }
    with pytest.raises(
        SpecError, match=r"algorithm\.fedavg-decay\.server_lr_decay: .*less than or equal to 1"
    ):
        _spec(server_lr_decay=1.5)
    with pytest.raises(SpecError, match=r"algorithm\.fedavg-decay\.server_lr: .*greater than 0"):
        _spec(server_lr=0.0)
    assert parse_spec({**TINY, "algorithm": {"name": "fedavg-decay"}, "share": "predictor"})


def test_without_decay_it_is_fedavg() -> None:
    decay = _accuracies(_spec(server_lr=1.0, server_lr_decay=1.0))
    fedavg = _accuracies(parse_spec({**TINY, "algorithm": {"name": "fedavg"}}))
    # w + (avg - w) is avg up to float rounding.
    assert decay == pytest.approx(fedavg, abs=1e-3)


def test_decay_learns_and_records_its_step() -> None:
    sink = MemorySink()
    run(_spec(server_lr=1.0, server_lr_decay=0.8), sink)
    accs = [e.metrics["test_acc"] for e in sink.events]
    assert accs[-1] > 0.5  # chance is 0.2
    steps = [e.metrics["server_lr"] for e in sink.events[1:]]
    assert steps == pytest.approx([0.8**t for t in range(TINY["rounds"])])


def test_resume_equals_uninterrupted() -> None:
    spec = _spec(server_lr=1.0, server_lr_decay=0.8)
    full = MemorySink()
    run(spec, full)
    ckpt = next(c for e in full.events if e.round == 2 for c in e.checkpoints if c.kind == "full")
    resumed = MemorySink()
    run(spec, resumed, resume_from=ckpt.data)
    keys = ("test_acc", "test_loss", "server_lr")
    for a, b in zip(full.events[3:], resumed.events, strict=True):
        assert [a.metrics[k] for k in keys] == [b.metrics[k] for k in keys]
