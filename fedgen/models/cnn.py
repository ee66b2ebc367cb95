"""Classifiers split into `features` (extractor) and `predictor` (last linear layer).

The split lets algorithms share or regularise the predictor alone (FedGen's
generator targets the predictor's input space, reference §3):

* `official-cnn`: the official code's networks (reference §3). mnist-like inputs:
  Conv(1->6,s2)+BN+ReLU, Conv(6->16,s2)+BN+ReLU, Flatten, Linear(784->32) | Linear(32->C),
  26,434 parameters for 10 classes. CelebA: three Conv+BN+ReLU+MaxPool blocks,
  Linear(64->32) | Linear(32->2), 25,954 parameters.
* `mcmahan-cnn`: McMahan et al. 2017 (arXiv 1602.05629), the CNN the paper cites:
  Conv5x5(32)+ReLU+MaxPool, Conv5x5(64)+ReLU+MaxPool, FC 512+ReLU | Linear(512->C).
* `cifar-cnn`: McMahan et al. 2017's CIFAR-10 model, "two convolutional layers followed by
  two fully connected layers and then a linear transformation layer" (the TensorFlow CIFAR-10
  tutorial network it names, without its local response normalisations):
  Conv5x5(64)+ReLU+MaxPool3x3/2, Conv5x5(64)+ReLU+MaxPool3x3/2, FC 384+ReLU, FC 192+ReLU |
  Linear(192->C); 1.76 M parameters on 32x32 inputs (the paper's 24x24 crops: about 1.07 M).
* `mlr`: multinomial logistic regression (FedProx's MNIST and Synthetic model): the input
  flattened is the latent, | Linear(features->C).
* `resnet18`: `fedgen.models.resnet`.

`ModelConfig.projection_dim` > 0 inserts a projection head between the features and the
predictor (`add_projection_head`): MOON's network of base encoder, projection head and
output layer (Li, He, Song 2021, arXiv.org/abs/2103.16257, §3.2), for any registered model.

Which shapes each accepts, its latent size and its parameter count: its declaration,
`fedgen.models.builtin`; `build_model` builds what the model registry names.
"""

from __future__ import annotations

import torch
from torch import nn

from fedgen.models.decl import ModelConfig
from fedgen.models.registry import get_model

PREDICTOR_PREFIX = "predictor."


class SplitModel(nn.Module):
    """`features(x) -> z` then `predictor(z) -> logits`.

    With a projection head (`add_projection_head`), `projection` sits between them:
    z = projection(features(x)); without one (the default) it is None and holds no state.
    """

    projection: nn.Module | None

    def __init__(self, features: nn.Module, predictor: nn.Linear) -> None:
        super().__init__()
        self.features = features
        # Registered empty (no state), so a head set later sits between the two in state dicts.
        self.register_module("projection", None)
        self.predictor = predictor

    @property
    def latent_dim(self) -> int:
        return int(self.predictor.in_features)

    def extract(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> latent z (B, latent_dim): the projection head's output if any."""
        out: torch.Tensor = self.features(x)
        if self.projection is not None:
            out = self.projection(out)
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


def build_official(cfg: ModelConfig) -> SplitModel:
    return _official(cfg)


def build_mcmahan(cfg: ModelConfig) -> SplitModel:
    return _mcmahan(cfg)


def build_cifar_cnn(cfg: ModelConfig) -> SplitModel:
    """McMahan et al.'s CIFAR CNN; pools of 3x3, stride 2, padding 1 halve the side twice."""
    side = (cfg.image_size + 3) // 4
    features = nn.Sequential(
        nn.Conv2d(cfg.in_channels, 64, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, padding=1),
        nn.Conv2d(64, 64, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, padding=1),
        nn.Flatten(),
        nn.Linear(64 * side * side, 384),
        nn.ReLU(),
        nn.Linear(384, 192),
        nn.ReLU(),
    )
    return SplitModel(features, nn.Linear(192, cfg.num_classes))


def build_mlr(cfg: ModelConfig) -> SplitModel:
    """Multinomial logistic regression: softmax(W x + b) on the flattened input."""
    c, h, w = cfg.shape
    return SplitModel(nn.Sequential(nn.Flatten()), nn.Linear(c * h * w, cfg.num_classes))


def add_projection_head(model: SplitModel, dim: int) -> SplitModel:
    """Give `model` a projection head of output width `dim`, in place, and return it.

    MOON's network (Li, He, Song 2021, §3.2): base encoder, projection head, output layer.
    The head is a 2-layer MLP, features d -> d -> `dim` with a ReLU between (the paper's
    §4.1 uses output width 256); the predictor is redrawn to read `dim` instead of d. The
    head's parameters are drawn from the global RNG (`build_model` seeds it) after the model's.
    """
    if dim <= 0:
        raise ValueError(f"projection head width must be positive, got {dim}")
    d = model.latent_dim
    model.projection = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, dim))
    model.predictor = nn.Linear(dim, model.predictor.out_features)
    return model


def build_model(cfg: ModelConfig, seed: int) -> SplitModel:
    """Build the registered model `cfg.name` (`fedgen.models.registry`) with parameters drawn
    from `seed` (the global RNG is left untouched), with its projection head when
    `cfg.projection_dim` > 0 (drawn after the model's own parameters, which stay the same)."""
    builder = get_model(cfg.name).load_builder()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model: SplitModel = builder(cfg)
        if cfg.projection_dim > 0:
            model = add_projection_head(model, cfg.projection_dim)
        return model


def predictor_keys(model: nn.Module) -> list[str]:
    """Names of the predictor's parameters (what `share: predictor` sends)."""
    return [k for k, _ in model.named_parameters() if k.startswith(PREDICTOR_PREFIX)]
