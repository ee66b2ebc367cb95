"""Classifiers split into `features` (extractor) and `predictor` (last linear layer).

The split lets algorithms share or regularise the predictor alone (FedGen's
generator targets the predictor's input space, reference §3):

* `official-cnn`: the official code's networks (reference §3). mnist-like inputs:
  Conv(1->6,s2)+BN+ReLU, Conv(6->16,s2)+BN+ReLU, Flatten, Linear(784->32) | Linear(32->C),
  26,434 parameters for 10 classes. CelebA: three Conv+BN+ReLU+MaxPool blocks,
  Linear(64->32) | Linear(32->2), 25,954 parameters.
* `mcmahan-cnn`: McMahan et al. 2017 (arXiv 1602.05629), the CNN the paper cites:
  Conv5x5(32)+ReLU+MaxPool, Conv5x5(64)+ReLU+MaxPool, FC 512+ReLU | Linear(512->C).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

PREDICTOR_PREFIX = "predictor."


@dataclass(frozen=True)
class ModelConfig:
    """What a classifier needs to know about its inputs."""

    name: str
    in_channels: int
    image_size: int
    num_classes: int


class SplitModel(nn.Module):
    """`features(x) -> z` then `predictor(z) -> logits`."""

    def __init__(self, features: nn.Module, predictor: nn.Linear) -> None:
        super().__init__()
        self.features = features
        self.predictor = predictor

    @property
    def latent_dim(self) -> int:
        return int(self.predictor.in_features)

    def extract(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> latent z (B, latent_dim)."""
        out: torch.Tensor = self.features(x)
        return out

    def classify(self, z: torch.Tensor) -> torch.Tensor:
        """Latent z (B, latent_dim) -> logits (B, num_classes)."""
        out: torch.Tensor = self.predictor(z)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classify(self.extract(x))


def _conv_bn(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]


def _official(cfg: ModelConfig) -> SplitModel:
    if cfg.image_size == 84:  # CelebA
        layers: list[nn.Module] = []
        cin = cfg.in_channels
        for cout in (16, 32, 64):
            layers += [*_conv_bn(cin, cout), nn.MaxPool2d(2, 2)]
            cin = cout
        layers += [nn.Flatten(), nn.Linear(64, 32)]
        return SplitModel(nn.Sequential(*layers), nn.Linear(32, cfg.num_classes))
    # 28x28 -> 14 -> 7 with stride-2 convs; 16*7*7 = 784.
    side = (cfg.image_size + 3) // 4
    features = nn.Sequential(
        *_conv_bn(cfg.in_channels, 6),
        *_conv_bn(6, 16),
        nn.Flatten(),
        nn.Linear(16 * side * side, 32),  # no activation: z is linear (official encode_fc1)
    )
    return SplitModel(features, nn.Linear(32, cfg.num_classes))


def _mcmahan(cfg: ModelConfig) -> SplitModel:
    side = cfg.image_size // 4
    features = nn.Sequential(
        nn.Conv2d(cfg.in_channels, 32, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(32, 64, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2, 2),
        nn.Flatten(),
        nn.Linear(64 * side * side, 512),
        nn.ReLU(),
    )
    return SplitModel(features, nn.Linear(512, cfg.num_classes))


BUILDERS = {"official-cnn": _official, "mcmahan-cnn": _mcmahan}


def build_model(cfg: ModelConfig, seed: int) -> SplitModel:
    """Build a classifier with parameters drawn from `seed` (the global RNG is left untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BUILDERS[cfg.name](cfg)


def predictor_keys(model: nn.Module) -> list[str]:
    """Names of the predictor's parameters (what `share: predictor` sends)."""
    return [k for k, _ in model.named_parameters() if k.startswith(PREDICTOR_PREFIX)]
