"""fedgen.sizes: parameter counts against the real modules, the estimate against real checkpoints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from fedgen import checkpoint
from fedgen.models.cnn import ModelConfig, build_model, predictor_keys
from fedgen.models.generator import Generator, generator_config
from fedgen.runner import Simulation
from fedgen.sizes import (
    INPUT_SHAPES,
    checkpoint_estimate,
    estimate_checkpoint_bytes,
    format_bytes,
    generator_buffers,
    generator_params,
    latent_dim,
    model_shape,
)
from fedgen.spec import ExperimentSpec
from tests.support.specs import tiny_spec

FASHION = Path("/usr/share/datasets/fashion-mnist")


def _numel(tensors: Any) -> int:
    return sum(int(t.numel()) for t in tensors)


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


def _real_full_checkpoint(spec: ExperimentSpec) -> int:
    """Bytes of the full checkpoint after round 1 (optimiser state exists from then on)."""
    sim = Simulation(spec)
    sim.initial_event()
    sim.round(1)
    return len(checkpoint.to_bytes(sim.full_state(1)))


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
    real = _real_full_checkpoint(spec)
    estimate = estimate_checkpoint_bytes(spec)
    assert real <= estimate <= 1.1 * real, (real, estimate)


@pytest.mark.slow  # real training to measure checkpoints
@pytest.mark.skipif(not FASHION.is_dir(), reason="no Fashion-MNIST in /usr/share/datasets")
@pytest.mark.parametrize("algorithm", ["fedavg", "fedgen"])
def test_estimate_on_fashion_mnist_shape(algorithm: str) -> None:
    spec = ExperimentSpec.model_validate(
        {"rounds": 1, "local_steps": 1, "algorithm": {"name": algorithm}}
    )
    real = _real_full_checkpoint(spec)
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
    assert est.total > 6 * 1024**3  # 1000 feature extractors of 1.6 M parameters
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
