"""The FedGen generator: presets, one-hot input, noise, generator-only checkpoints."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn

from fedgen.models.generator import (
    FoldedGenerator,
    GeneratorConfig,
    build_generator,
    generator_checkpoint,
    generator_config,
    load_generator_checkpoint,
    sample_latents,
    sample_noise,
)


@pytest.mark.parametrize(
    ("preset", "dataset", "hidden", "noise"),
    [
        ("default", "mnist", 256, 32),
        ("default", "fashion-mnist", 256, 32),
        ("cnn0", "emnist-letters", 256, 64),
        ("cnn1", "emnist-letters", 128, 32),
        ("cnn2", "emnist-letters", 128, 16),
        ("cnn3", "emnist-letters", 64, 32),
        ("cnn3", "mnist", 64, 16),
        ("default", "celeba", 128, 32),
    ],
)
def test_presets(preset: str, dataset: str, hidden: int, noise: int) -> None:
    """Reference §4 GENERATORCONFIGS / Table 2, per dataset family."""
    cfg = generator_config(preset, dataset, 10, 32)
    assert (cfg.hidden_dim, cfg.noise_dim, cfg.latent_dim) == (hidden, noise, 32)
    assert generator_config(preset, dataset, 10, 32, hidden_dim=7).hidden_dim == 7


def test_parameter_count_matches_official() -> None:
    """MNIST generator: 19,744 parameters (reference §4), BN included."""
    gen = build_generator(generator_config("default", "mnist", 10, 32), 0)
    assert sum(p.numel() for p in gen.parameters()) == 19_744


def test_onehot_gather_equals_concatenated_input() -> None:
    cfg = GeneratorConfig(8, 16, 4, 5, batchnorm=False)
    gen = build_generator(cfg, 0)
    y = torch.tensor([0, 3, 4, 3])
    eps = torch.rand(4, 8)
    h = nn.functional.linear(
        torch.cat([eps, nn.functional.one_hot(y, 5).float()], 1), gen.fc.weight, gen.fc.bias
    )
    expected = gen.out(torch.relu(h))
    torch.testing.assert_close(gen(y, eps), expected)


def test_embedding_variant_shapes() -> None:
    gen = build_generator(GeneratorConfig(8, 16, 4, 5, embedding=True), 0)
    assert gen(torch.tensor([1, 2]), torch.rand(2, 8)).shape == (2, 4)


def test_noise_distribution() -> None:
    rng = torch.Generator().manual_seed(0)
    u = sample_noise(20_000, GeneratorConfig(8, 16, 4, 5, noise="uniform"), rng)
    n = sample_noise(20_000, GeneratorConfig(8, 16, 4, 5, noise="normal"), rng)
    assert u.shape == (20_000, 8)
    assert float(u.min()) >= 0.0
    assert float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 0.01
    assert abs(float(n.mean())) < 0.02
    assert abs(float(n.std()) - 1.0) < 0.02
    assert float(n.min()) < 0.0


def test_noise_is_reproducible_from_the_generator_state() -> None:
    cfg = GeneratorConfig(8, 16, 4, 5)
    rng = torch.Generator().manual_seed(3)
    state = rng.get_state()
    a = sample_noise(5, cfg, rng)
    rng.set_state(state)
    torch.testing.assert_close(a, sample_noise(5, cfg, rng))


def test_checkpoint_roundtrip_and_sample_latents() -> None:
    cfg = generator_config("cnn1", "mnist", 10, 32, noise="normal")
    gen = build_generator(cfg, 1)
    data = generator_checkpoint(gen, 7)
    raw = torch.load(io.BytesIO(data), weights_only=True)
    assert raw["round"] == 7
    assert raw["hidden_dim"] == 128
    assert raw["noise"] == "normal"
    assert len(data) < 200_000
    loaded = load_generator_checkpoint(data)
    assert loaded.cfg == cfg
    z1, y1 = sample_latents(gen, 3, seed=5)
    z2, y2 = sample_latents(loaded, 3, seed=5)
    assert z1.shape == (30, 32)
    assert y1.tolist() == [c for c in range(10) for _ in range(3)]
    torch.testing.assert_close(z1, z2)
    torch.testing.assert_close(y1, y2)


@pytest.mark.parametrize(("embedding", "batchnorm"), [(False, True), (True, True), (False, False)])
def test_folded_generator_equals_the_module_in_eval_mode(embedding: bool, batchnorm: bool) -> None:
    """BN folded into the first Linear and the label input into a table: same z, no autograd."""
    cfg = GeneratorConfig(
        noise_dim=8,
        hidden_dim=16,
        latent_dim=4,
        num_classes=5,
        embedding=embedding,
        batchnorm=batchnorm,
    )
    gen = build_generator(cfg, seed=3)
    rng = torch.Generator().manual_seed(0)
    opt = torch.optim.SGD(gen.parameters(), lr=0.1)
    for _ in range(5):  # move BN's running statistics and affine parameters off their defaults
        labels = torch.randint(0, 5, (32,), generator=rng)
        opt.zero_grad()
        gen(labels, sample_noise(32, cfg, rng)).pow(2).mean().backward()
        opt.step()
    labels = torch.arange(5).repeat(8)
    noise = sample_noise(40, cfg, rng)
    folded = FoldedGenerator(gen)
    with torch.no_grad():
        expected = gen.eval()(labels, noise)
    z = folded(labels, noise)
    assert not z.requires_grad
    torch.testing.assert_close(z, expected, rtol=1e-5, atol=1e-6)
