"""fedgen.sizes: parameter counts against the real modules, the estimate against real checkpoints."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from fedgen import checkpoint
from fedgen.models.builtin import BUILTINS as BUILTIN_MODEL_DECLS
from fedgen.models.cnn import build_model, predictor_keys
from fedgen.models.decl import ModelConfig
from fedgen.models.generator import Generator, generator_config
from fedgen.models.registry import model_names
from fedgen.resources import format_bytes
from fedgen.runner import Simulation
from fedgen.sizes import (
    INPUT_SHAPES,
    checkpoint_estimate,
    estimate_checkpoint_bytes,
    generator_buffers,
    generator_params,
    latent_dim,
    model_shape,
    users_ever_sampled,
)
from fedgen.spec import ExperimentSpec, parse_spec
from tests.support.rgb32 import rgb32_dataset
from tests.support.specs import tiny_spec

FASHION = Path("/usr/share/datasets/fashion-mnist")


def _numel(tensors: Any) -> int:
    return sum(int(t.numel()) for t in tensors)


# (model, norm, (C, H, W), classes) beyond the CNNs on the built-in datasets' shapes.
NEW_MODELS: list[tuple[str, str | None, tuple[int, int, int], int]] = [
    ("resnet18", "group", (3, 32, 32), 10),
    ("resnet18", "batch", (3, 32, 32), 100),
    ("cifar-cnn", None, (3, 32, 32), 10),
    ("cifar-cnn", None, (1, 32, 32), 100),
    ("mlr", None, (1, 1, 60), 10),
    ("mlr", None, (1, 28, 28), 10),
]


@pytest.mark.parametrize(
    ("name", "norm", "shape", "classes"),
    NEW_MODELS,
    ids=[f"{m[0]}-{m[1]}-{m[3]}" for m in NEW_MODELS],
)
def test_new_model_counts_match_torch(
    name: str, norm: str | None, shape: tuple[int, int, int], classes: int
) -> None:
    c, h, w = shape
    model = build_model(ModelConfig(name, c, h, classes, norm or "none", w), 0)
    counted = model_shape(name, c, h, classes, norm, w)
    params, buffers = list(model.parameters()), list(model.buffers())
    assert counted.num_params == _numel(params)
    assert counted.features.count + counted.predictor.count == len(params)
    assert counted.predictor.nbytes // 4 == _numel(p for p in model.predictor.parameters())
    assert counted.buffers.count == len(buffers)
    assert counted.buffers.nbytes == sum(b.numel() * b.element_size() for b in buffers)
    assert model.latent_dim == latent_dim(name, shape)


@pytest.mark.parametrize("dataset", sorted(INPUT_SHAPES))
@pytest.mark.parametrize("name", ["official-cnn", "mcmahan-cnn"])
def test_model_counts_match_torch(name: str, dataset: str) -> None:
    c, side, classes = INPUT_SHAPES[dataset]
    model = build_model(ModelConfig(name, c, side, classes), 0)
    shape = model_shape(name, c, side, classes)
    pred = set(predictor_keys(model))
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    feats = [v for k, v in params.items() if k not in pred]
    assert shape.features.nbytes // 4 == _numel(feats)
    assert shape.features.count == len(feats)
    assert shape.predictor.nbytes // 4 == _numel(params[k] for k in pred)
    assert shape.predictor.count == len(pred)
    assert shape.buffers.count == len(buffers)
    assert shape.buffers.nbytes == sum(b.numel() * b.element_size() for b in buffers.values())
    assert shape.num_params == _numel(params.values())
    assert model.latent_dim == latent_dim(name)


@pytest.mark.parametrize("family", ["mnist", "emnist-letters", "celeba"])
@pytest.mark.parametrize("preset", ["default", "cnn0", "cnn1", "cnn2", "cnn3"])
@pytest.mark.parametrize(("embedding", "batchnorm"), [(False, True), (True, False), (True, True)])
def test_generator_counts_match_torch(
    family: str, preset: str, embedding: bool, batchnorm: bool
) -> None:
    for latent in (32, 512):
        cfg = generator_config(preset, family, 10, latent, embedding=embedding, batchnorm=batchnorm)
        gen = Generator(cfg)
        params = generator_params(
            cfg.noise_dim,
            cfg.hidden_dim,
            latent,
            10,
            embedding=embedding,
            batchnorm=batchnorm,
        )
        buffers = generator_buffers(cfg.hidden_dim, batchnorm=batchnorm)
        assert params.nbytes // 4 == _numel(gen.parameters())
        assert params.count == len(list(gen.parameters()))
        assert buffers.count == len(list(gen.buffers()))
        assert buffers.nbytes == sum(b.numel() * b.element_size() for b in gen.buffers())


BUILTIN_MODELS = [d.name for d in BUILTIN_MODEL_DECLS]
ESTIMATED_ALGORITHMS = ["fedavg", "scaffold", "fedgen"]


def test_every_built_in_model_is_in_the_estimate_matrix() -> None:
    assert set(BUILTIN_MODELS) >= {"resnet18", "cifar-cnn", "mlr", "official-cnn", "mcmahan-cnn"}
    assert set(BUILTIN_MODELS) <= set(model_names())


@pytest.mark.slow  # real training to measure checkpoints
@pytest.mark.parametrize("algorithm", ESTIMATED_ALGORITHMS)
@pytest.mark.parametrize(
    "model",
    [*({"name": n} for n in BUILTIN_MODELS), {"name": "resnet18", "norm": "batch"}],
    ids=[*BUILTIN_MODELS, "resnet18-bn"],
)
def test_estimate_of_every_model_is_within_ten_percent(
    model: dict[str, Any], algorithm: str
) -> None:
    """Every built-in model with FedAvg, SCAFFOLD and FedGen on 3x32x32 inputs, two of three
    users a round: the estimate against the run's last (largest) full checkpoint. Per-user
    state exists for the users drawn so far only, so the estimate counts those exactly (it
    counted min(num_users, rounds x users_per_round): 25% above for cifar-cnn + SCAFFOLD
    after one round)."""
    base: dict[str, Any] = {
        "data": {"name": "synthetic-rgb32", "synthetic_samples": 100},
        "partition": {"num_users": 3, "alpha": 1.0, "min_samples": 10},
        "users_per_round": 2,
        "rounds": 2,
        "local_steps": 1,
        "batch_size": 4,
        "eval_batch_size": 64,
        "checkpoint_every": 0,
        "model": model,
        "algorithm": {"name": "fedgen", "gen_batch_size": 4, "server_batch_size": 4}
        if algorithm == "fedgen"
        else {"name": algorithm},
    }
    with rgb32_dataset():
        spec = parse_spec(base)
        real = _real_last_checkpoint(spec)
        estimate = estimate_checkpoint_bytes(spec)
    assert real <= estimate <= 1.1 * real, (real, estimate)


@pytest.mark.slow  # real training to measure checkpoints
@pytest.mark.parametrize("algorithm", ESTIMATED_ALGORITHMS)
def test_estimate_of_mlr_on_synthetic_fedprox_is_within_ten_percent(algorithm: str) -> None:
    """MLR's checkpoint is mostly the users' batch streams: their permutations are counted from
    the users' sizes `data_seed` gives (they were left out: 0.42 of the real size)."""
    spec = parse_spec(
        {
            "data": {"name": "synthetic-fedprox"},
            "model": {"name": "mlr"},
            "partition": {"num_users": 30},
            "users_per_round": 10,
            "rounds": 3,
            "local_steps": 1,
            "batch_size": 4,
            "checkpoint_every": 0,
            "algorithm": {"name": algorithm},
        }
    )
    real = _real_last_checkpoint(spec)
    estimate = estimate_checkpoint_bytes(spec)
    assert real <= estimate <= 1.1 * real, (real, estimate)


def test_users_ever_sampled_replays_the_runners_draws() -> None:
    spec = tiny_spec(partition={"num_users": 12}, users_per_round=2, rounds=5, local_steps=1)
    sim = Simulation(spec)
    drawn: set[int] = set()
    for r in range(1, spec.rounds + 1):
        drawn |= set(sim.train(r).selected)
        assert users_ever_sampled(spec.model_copy(update={"rounds": r})) == len(drawn)
    assert len(drawn) < min(12, 5 * 2)  # some user was drawn twice: the bound was above


def _real_last_checkpoint(spec: ExperimentSpec) -> int:
    """Bytes of the full checkpoint after the last round (the largest the run writes)."""
    sim = Simulation(spec)
    sim.initial_event()
    for r in range(1, spec.rounds + 1):
        sim.round(r)
    return len(checkpoint.to_bytes(sim.full_state(spec.rounds)))


CASES: list[dict[str, Any]] = [
    {},
    {"algorithm": {"name": "fedgen"}},
    {"algorithm": {"name": "fedgen"}, "share": "predictor"},
    {"algorithm": {"name": "fedgen"}, "fidelity": {"profile": "paper"}},
    {"model": {"name": "mcmahan-cnn"}, "local_steps": 1},
    {"algorithm": {"name": "feddistill"}},
]


@pytest.mark.slow  # real training to measure checkpoints
@pytest.mark.parametrize("overrides", CASES, ids=lambda o: str(o) or "fedavg")
def test_estimate_is_at_most_ten_percent_above_the_real_checkpoint(
    overrides: dict[str, Any],
) -> None:
    spec = tiny_spec(**overrides)
    real = _real_last_checkpoint(spec)
    estimate = estimate_checkpoint_bytes(spec)
    assert real <= estimate <= 1.1 * real, (real, estimate)


@pytest.mark.slow  # real training to measure checkpoints
@pytest.mark.skipif(not FASHION.is_dir(), reason="no Fashion-MNIST in /usr/share/datasets")
@pytest.mark.parametrize("algorithm", ["fedavg", "fedgen"])
def test_estimate_on_fashion_mnist_shape(algorithm: str) -> None:
    spec = ExperimentSpec.model_validate(
        {"rounds": 1, "local_steps": 1, "algorithm": {"name": algorithm}}
    )
    real = _real_last_checkpoint(spec)
    estimate = estimate_checkpoint_bytes(spec)
    assert real <= estimate <= 1.1 * real, (real, estimate)


def test_per_user_state_drives_a_large_predictor_share() -> None:
    spec = ExperimentSpec.model_validate(
        {
            "model": {"name": "mcmahan-cnn"},
            "share": "predictor",
            "partition": {"num_users": 1000},
            "algorithm": {"name": "fedgen"},
        }
    )
    est = checkpoint_estimate(spec)
    # The feature extractors (1.6 M parameters) of the users the run's rounds draw (made on a
    # user's first training): most of the 1,000.
    assert users_ever_sampled(spec) > 800
    assert est.total > users_ever_sampled(spec) * 1.6e6 * 4
    assert est.driving_field() == "partition.num_users"
    default = checkpoint_estimate(ExperimentSpec())
    assert default.total < 1024**2


def test_estimate_does_not_import_torch() -> None:
    code = (
        "import sys; from fedgen.sizes import estimate_checkpoint_bytes; "
        "from fedgen.spec import ExperimentSpec; "
        "estimate_checkpoint_bytes(ExperimentSpec.model_validate({'algorithm': {'name': 'fedgen'}})); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("n", "text"),
    [(512, "512 B"), (1536, "1.5 KiB"), (1 << 30, "1 GiB"), (int(3.2 * (1 << 30)), "3.2 GiB")],
)
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text


def test_torch_tensor_sizes_are_float32() -> None:
    # The estimate counts 4 bytes per parameter: models are built in float32.
    assert torch.get_default_dtype() == torch.float32


def test_users_ever_sampled_past_the_replay_cap_is_the_expected_count() -> None:
    """Past MAX_REPLAYED_ROUNDS the count is N(1 - (1 - K/N)^R), close to the exact replay."""
    from fedgen import sampling

    # Prepare
    n, k, r = 10_000, 1, sampling.MAX_REPLAYED_ROUNDS + 1
    sampling.users_ever_sampled.cache_clear()
    # Execute
    capped = sampling.users_ever_sampled(0, n, k, r)
    exact = sampling.users_ever_sampled(0, n, k, sampling.MAX_REPLAYED_ROUNDS)
    # Assert
    assert capped == math.ceil(n * (1 - (1 - k / n) ** r))
    assert capped == pytest.approx(exact, rel=0.02)
