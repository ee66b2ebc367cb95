"""ResNet-18 for 32x32 inputs, split into `features` and `predictor` like the lab's CNNs.

The CIFAR variant of He et al. 2016 (arXiv 1512.03385) as federated papers use it: a 3x3
stem of 64 channels without max-pool, four stages of two basic blocks (64, 128, 256, 512
channels, strides 1, 2, 2, 2), global average pool, then the predictor Linear(512 -> C):
11.17 M parameters for 10 classes. `norm: group` (the default) normalises with GroupNorm of
2 groups per layer, as Hsieh et al. 2020 (ICML, arXiv 1910.00189) recommend for non-IID
federated learning: no running statistics, so nothing of a user's data stays in buffers and
the model stacks without per-client buffers. `norm: batch` uses BatchNorm (its running
statistics follow `fidelity.bn_buffers` like the CNNs'). Each block's last norm scale starts
at zero (`BasicBlock`).

`features` is an `nn.Sequential` of Conv2d, norm, ReLU, `BasicBlock`s, AdaptiveAvgPool2d and
Flatten: the layer kinds `fedgen.batched` stacks.
"""

from __future__ import annotations

import torch
from torch import nn

from fedgen.models.cnn import SplitModel
from fedgen.models.decl import ModelConfig

GN_GROUPS = 2  # Hsieh et al. 2020: GroupNorm with 2 groups
STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))
BLOCKS_PER_STAGE = 2


def norm_layer(kind: str, channels: int) -> nn.Module:
    """GroupNorm(2 groups) for `group`, BatchNorm2d for `batch`."""
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    return nn.GroupNorm(GN_GROUPS, channels)


class BasicBlock(nn.Module):
    """relu(norm2(conv2(relu(norm1(conv1(x))))) + shortcut(x)); the shortcut is empty or a
    1x1 strided convolution and a norm where the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int, norm: str) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.norm1 = norm_layer(norm, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.norm2 = norm_layer(norm, cout)
        # Zero-initialised last scale: each block starts as its shortcut (Goyal et al. 2017,
        # arXiv 1706.02677; as the GroupNorm ResNets of federated code bases do). Without it
        # the GroupNorm net's residual stream grows block by block and small-batch SGD
        # overshoots from the first steps (tested: tests/fedgen/test_models.py).
        nn.init.zeros_(self.norm2.get_parameter("weight"))
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), norm_layer(norm, cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


def build_resnet18(cfg: ModelConfig) -> SplitModel:
    """ResNet-18 (CIFAR variant) with `cfg.norm` ('group' or 'batch')."""
    norm = cfg.norm if cfg.norm in ("group", "batch") else "group"
    layers: list[nn.Module] = [
        nn.Conv2d(cfg.in_channels, 64, 3, stride=1, padding=1, bias=False),
        norm_layer(norm, 64),
        nn.ReLU(),
    ]
    cin = 64
    for cout, stride in STAGES:
        for b in range(BLOCKS_PER_STAGE):
            layers.append(BasicBlock(cin, cout, stride if b == 0 else 1, norm))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return SplitModel(nn.Sequential(*layers), nn.Linear(cin, cfg.num_classes))
