"""FedGen's conditional generator G(eps, y) -> z in the classifier's latent space.

Paper: Zhu, Hong, Zhou 2021, "Data-Free Knowledge Distillation for Heterogeneous
Federated Learning", arxiv.org/abs/2105.10056 (Sec. 3.1, Table 2).
Reference §4: input [eps ; onehot(y)] (or [eps ; embedding(y)]), Linear -> optional
BatchNorm1d -> ReLU -> Linear, linear output of the predictor's input size.

Noise is always drawn by the caller with an explicit `torch.Generator` on the
run's device (`sample_noise`), so nothing is created on the CPU for a GPU run and
the noise stream is part of the resumable state.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import torch
from torch import nn

from fedgen.generator_presets import preset_dims

NoiseKind = Literal["uniform", "normal"]


@dataclass(frozen=True)
class GeneratorConfig:
    """Shape and options of a generator; `noise` is how its input noise is drawn."""

    noise_dim: int
    hidden_dim: int
    latent_dim: int
    num_classes: int
    embedding: bool = False
    batchnorm: bool = True
    noise: NoiseKind = "uniform"


def generator_config(
    preset: str,
    dataset: str,
    num_classes: int,
    latent_dim: int,
    *,
    noise_dim: int | None = None,
    hidden_dim: int | None = None,
    embedding: bool = False,
    batchnorm: bool = True,
    noise: NoiseKind = "uniform",
    model: str = "official-cnn",
) -> GeneratorConfig:
    """Resolve a named preset for `dataset` and `model` (`preset_dims`: the preset widened
    for a model of wide latent features); explicit dimensions override the preset's.

    Raises
    ------
    KeyError
        If `preset` is not one of 'default', 'cnn0'..'cnn3'.
    """
    hidden, nd = preset_dims(dataset, preset, model)
    return GeneratorConfig(
        noise_dim=noise_dim if noise_dim is not None else nd,
        hidden_dim=hidden_dim if hidden_dim is not None else hidden,
        latent_dim=latent_dim,
        num_classes=num_classes,
        embedding=embedding,
        batchnorm=batchnorm,
        noise=noise,
    )


def sample_noise(
    n: int, cfg: GeneratorConfig, rng: torch.Generator, device: torch.device | str | None = None
) -> torch.Tensor:
    """(n, noise_dim) noise, U[0,1) or N(0,I) per `cfg.noise`, drawn from `rng` on its device."""
    dev = torch.device(device) if device is not None else rng.device
    if cfg.noise == "normal":
        return torch.randn(n, cfg.noise_dim, generator=rng, device=dev)
    return torch.rand(n, cfg.noise_dim, generator=rng, device=dev)


class Generator(nn.Module):
    """G(y, eps) -> z. One-hot input is applied as a column gather of the first layer."""

    def __init__(self, cfg: GeneratorConfig) -> None:
        super().__init__()
        self.cfg = cfg
        label_dim = cfg.noise_dim if cfg.embedding else cfg.num_classes
        self.embed: nn.Embedding | None = (
            nn.Embedding(cfg.num_classes, cfg.noise_dim) if cfg.embedding else None
        )
        self.fc = nn.Linear(cfg.noise_dim + label_dim, cfg.hidden_dim)
        self.bn: nn.Module = nn.BatchNorm1d(cfg.hidden_dim) if cfg.batchnorm else nn.Identity()
        self.out = nn.Linear(cfg.hidden_dim, cfg.latent_dim)

    def forward(self, labels: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Labels (B,) int64 and noise (B, noise_dim) -> latent z (B, latent_dim)."""
        nd = self.cfg.noise_dim
        w = self.fc.weight
        if self.embed is not None:
            h = nn.functional.linear(torch.cat([noise, self.embed(labels)], dim=1), w, self.fc.bias)
        else:
            # [eps ; onehot(y)] @ W^T == eps @ W_eps^T + W_y[:, y]^T (no one-hot materialised).
            h = torch.addmm(self.fc.bias, noise, w[:, :nd].t()) + w[:, nd:].t().index_select(
                0, labels
            )
        out: torch.Tensor = self.out(torch.relu(self.bn(h)))
        return out


class FoldedGenerator:
    """A frozen copy of G in eval mode, folded for sampling: what clients call every round.

    In eval mode BatchNorm is an affine map, so it folds into the first Linear, and
    the label input (one-hot or embedding) becomes a per-class row of a (C, hidden)
    table. G(y, eps) is then table[y] + eps @ W_eps, ReLU, Linear: two matmuls and a
    gather, where the module needs five passes over the (n, hidden) activations.
    Equal to `generator.eval()(labels, noise)` up to float rounding (tested); built
    again whenever the generator changes.
    """

    def __init__(self, generator: Generator) -> None:
        g, nd = generator, generator.cfg.noise_dim
        with torch.no_grad():
            w = g.fc.weight
            label_w = w[:, nd:].t()  # (label_dim, hidden)
            table = (g.embed.weight @ label_w) if g.embed is not None else label_w.clone()
            noise_w = w[:, :nd].t()  # (noise_dim, hidden)
            bias: torch.Tensor = g.fc.bias
            if isinstance(g.bn, nn.BatchNorm1d):
                bn = g.bn
                assert bn.running_mean is not None
                assert bn.running_var is not None
                scale = torch.rsqrt(bn.running_var + bn.eps)
                shift = -bn.running_mean * scale
                if bn.affine:
                    scale, shift = scale * bn.weight, shift * bn.weight + bn.bias
                noise_w, table, bias = noise_w * scale, table * scale, bias * scale + shift
            # clone(contiguous_format) always copies: the folded weights never alias G's.
            self.noise_weight = noise_w.clone(memory_format=torch.contiguous_format)
            self.label_table = (table + bias).contiguous()  # rows gathered per label
            self.out_weight_t = g.out.weight.t().clone(memory_format=torch.contiguous_format)
            self.out_bias = g.out.bias.detach().clone()

    def __call__(self, labels: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Labels (n,) int64 and noise (n, noise_dim) -> latent z (n, latent_dim), no autograd."""
        with torch.no_grad():
            h = self.label_table.index_select(0, labels)
            h.addmm_(noise, self.noise_weight).relu_()
            return torch.addmm(self.out_bias, h, self.out_weight_t)


def build_generator(cfg: GeneratorConfig, seed: int) -> Generator:
    """A generator with parameters drawn from `seed` (the global RNG is left untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Generator(cfg)


def generator_checkpoint(generator: Generator, server_round: int) -> bytes:
    """A small, self-contained checkpoint: config fields, state_dict (CPU), round."""
    obj: dict[str, Any] = dict(asdict(generator.cfg))
    obj["state_dict"] = {k: v.detach().cpu().clone() for k, v in generator.state_dict().items()}
    obj["round"] = server_round
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def load_generator_checkpoint(data: bytes, device: torch.device | str = "cpu") -> Generator:
    """Rebuild a generator (in eval mode) from `generator_checkpoint` bytes."""
    obj = torch.load(io.BytesIO(data), map_location=device, weights_only=True)
    names = {f.name for f in fields(GeneratorConfig)}
    cfg = GeneratorConfig(**{k: v for k, v in obj.items() if k in names})
    gen = Generator(cfg).to(device)
    gen.load_state_dict(obj["state_dict"])
    return gen.eval()


@torch.no_grad()
def sample_latents(
    generator: Generator, per_class: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`per_class` latents for every label, in eval mode: (z (C*per_class, d), labels)."""
    device = next(generator.parameters()).device
    cfg = generator.cfg
    labels = torch.arange(cfg.num_classes, device=device).repeat_interleave(per_class)
    rng = torch.Generator(device=device)
    rng.manual_seed(seed)
    was_training = generator.training
    generator.eval()
    z = generator(labels, sample_noise(labels.shape[0], cfg, rng, device))
    generator.train(was_training)
    return z, labels
