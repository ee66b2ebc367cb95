"""MOON's projection head (issue 39): `algorithm.projection_dim`.

0 (the default) is the model without a head, as before the option: same spec identity (the
moon case of tests/fedgen/test_fingerprint.py pins its curve bit for bit). Above 0, the head
(features d -> d -> projection_dim) is part of the federated model: the contrastive z and the
predictor's input are its output, it is in the global state and the bytes sent, it learns, it
is in the checkpoints (a resumed run equals an uninterrupted one) and the final model rebuilds
with it; the checkpoint estimate counts it.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from fedgen import checkpoint
from fedgen.events import MemorySink, RoundEvent
from fedgen.models.cnn import build_model
from fedgen.models.decl import ModelConfig
from fedgen.runner import Simulation, run
from fedgen.sizes import estimate_checkpoint_bytes, model_shape
from fedgen.spec import SpecError
from fedgen_lab.models import model_from_checkpoint
from tests.support.specs import tiny_spec

pytestmark = pytest.mark.slow  # real training on the tiny synthetic task

DIM = 8
MOON = {"name": "moon", "mu": 1.0, "temperature": 0.5}
# `spec_hash` of {"algorithm": {"name": "moon"}} before projection_dim existed.
MOON_SPEC_HASH = "7dc64ae05fdbca2d"


def _spec(projection_dim: int, **kw: Any) -> Any:
    return tiny_spec(algorithm={**MOON, "projection_dim": projection_dim}, **kw)


def _records(events: list[RoundEvent]) -> list[tuple[Any, ...]]:
    """Every metric but the timings, and every user's results, per round."""
    return [
        (
            e.round,
            sorted((k, v) for k, v in e.metrics.items() if "_ms" not in k),
            [(u.user, u.test_acc, u.test_loss, u.selected, u.train_loss) for u in e.users],
        )
        for e in events
    ]


def test_zero_keeps_the_spec_identity_and_the_model() -> None:
    # Prepare
    from fedgen.spec import parse_spec

    # Execute
    default = parse_spec({"algorithm": {"name": "moon"}})
    zero = parse_spec({"algorithm": {"name": "moon", "projection_dim": 0}})
    model = Simulation(_spec(0)).algo.fed.global_model
    # Assert
    assert default.spec_hash() == zero.spec_hash() == MOON_SPEC_HASH
    assert "projection_dim" not in zero.algorithm.model_dump()
    assert model.projection is None
    assert not any(k.startswith("projection.") for k in model.state_dict())


@pytest.mark.parametrize(
    ("value", "limit"),
    [(-1, "greater than or equal to 0"), (1025, "less than or equal to 1024")],
)
def test_out_of_range_is_refused_naming_the_field_and_the_limit(value: int, limit: str) -> None:
    with pytest.raises(SpecError, match=rf"algorithm\.moon\.projection_dim: .*{limit}"):
        _spec(value)


@pytest.mark.parametrize("name", ["fedavg", "fedprox", "scaffold"])
def test_other_algorithms_refuse_it(name: str) -> None:
    with pytest.raises(SpecError, match=rf"algorithm\.{name}\.projection_dim: unknown field"):
        tiny_spec(algorithm={"name": name, "projection_dim": DIM})


def test_contrastive_z_is_the_heads_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """z, z_glob and z_prev have projection_dim columns; the predictor reads them."""
    # Prepare
    sim = Simulation(_spec(DIM))
    algo, user = sim.algo, sim.data.users[0]
    model = algo.fed.load_user_model(user)
    idx = user.train_idx[:16]
    x, y = sim.data.train_x[idx], sim.data.train_y[idx]
    seen: list[tuple[int, ...]] = []
    cosine = torch.nn.functional.cosine_similarity

    def recording(a: torch.Tensor, b: torch.Tensor, dim: int) -> torch.Tensor:
        seen.extend([tuple(a.shape), tuple(b.shape)])
        return cosine(a, b, dim=dim)

    monkeypatch.setattr(torch.nn.functional, "cosine_similarity", recording)
    # Execute
    loss = algo.local_loss(user, 1)(model, x, y, 0)
    # Assert
    assert torch.isfinite(loss)
    assert seen == [(16, DIM)] * 4  # (z, z_glob), (z, z_prev)
    assert model.predictor.in_features == DIM
    assert model.projection is not None


def test_head_is_federated_counted_and_learns() -> None:
    # Prepare
    sim, plain = Simulation(_spec(DIM)), Simulation(_spec(0))
    before = sim.algo.global_state()
    head = [k for k in before if k.startswith("projection.")]
    extra = sum(p.numel() for p in sim.algo.fed.global_model.parameters()) - sum(
        p.numel() for p in plain.algo.fed.global_model.parameters()
    )
    # Execute
    sim.initial_event()
    plain.initial_event()
    metrics, plain_metrics = sim.round(1).metrics, plain.round(1).metrics
    after = sim.algo.global_state()
    # Assert
    assert len(head) == 4  # two linear layers' weights and biases
    assert set(head) <= set(sim.algo.fed.shared_keys)  # sent, uploaded and averaged
    assert all(not torch.equal(before[k], after[k]) for k in head)
    per_model = 4 * extra * sim.spec.users_per_round  # float32, every selected user
    assert metrics["bytes_down"] - plain_metrics["bytes_down"] == per_model
    assert metrics["bytes_up"] - plain_metrics["bytes_up"] == per_model


def test_resume_equals_uninterrupted_bit_for_bit() -> None:
    # Prepare
    full = MemorySink()
    run(_spec(DIM, rounds=5, checkpoint_every=2), full)
    ckpt = next(c for e in full.events if e.round == 2 for c in e.checkpoints if c.kind == "full")
    saved = checkpoint.from_bytes(ckpt.data)["algorithm"]
    resumed = MemorySink()
    # Execute
    run(_spec(DIM, rounds=5, checkpoint_every=2), resumed, resume_from=ckpt.data)
    # Assert
    assert any(k.startswith("projection.") for k in saved["global"])
    assert [e.round for e in resumed.events] == [3, 4, 5]
    assert _records(resumed.events) == _records(full.events[3:])


def test_final_model_rebuilds_with_its_head() -> None:
    # Prepare
    sink = MemorySink()
    run(_spec(DIM, rounds=1), sink)
    ckpt = next(c for e in sink.events for c in e.checkpoints if c.kind == "model")
    x = torch.randn(4, 1, 28, 28)
    # Execute
    model = model_from_checkpoint(ckpt.data)
    # Assert
    assert model.projection is not None
    assert model.extract(x).shape == (4, DIM)
    assert model(x).shape == (4, 5)


def test_estimate_counts_the_head() -> None:
    # Prepare
    built = build_model(ModelConfig("official-cnn", 1, 28, 5, projection_dim=DIM), 0)
    spec = _spec(DIM, partition={"num_users": 8}, users_per_round=8)
    sim = Simulation(spec)
    sim.initial_event()
    sim.round(1)
    # Execute
    shape = model_shape("official-cnn", 1, 28, 5, projection_dim=DIM)
    real = len(checkpoint.to_bytes(sim.full_state(1)))
    estimate = estimate_checkpoint_bytes(spec)
    # Assert
    assert shape.num_params == sum(p.numel() for p in built.parameters())
    assert shape.state.nbytes == sum(
        t.numel() * t.element_size() for t in built.state_dict().values()
    )
    assert real <= estimate <= 1.1 * real, (real, estimate)
