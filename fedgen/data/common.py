"""What every dataset loader shares: the in-memory result, the error, the data root, downloads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fedgen.spec import DataSpec

if TYPE_CHECKING:  # tensors only in annotations: `fedgen validate` imports this without torch
    import torch


class DatasetError(RuntimeError):
    """Missing or corrupt dataset files; the message says where, what and how to get them."""


@dataclass(frozen=True)
class DatasetTensors:
    """A whole dataset in memory (CPU tensors, already normalised).

    Attributes
    ----------
    name
        Dataset name as in `DataSpec.name`.
    train_x, test_x
        float32 images, shape (N, C, H, W).
    train_y, test_y
        int64 labels, shape (N,).
    num_classes
        Number of classes.
    train_groups, test_groups
        CelebA only: the user id of every sample; None for the other datasets.
    """

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int
    train_groups: np.ndarray[Any, np.dtype[np.int64]] | None = None
    test_groups: np.ndarray[Any, np.dtype[np.int64]] | None = None


def default_root() -> Path:
    """The data root of a spec that names none: $FEDGEN_DATA, else ~/.fedgen/data."""
    env = os.environ.get("FEDGEN_DATA")
    return Path(env).expanduser() if env else Path("~/.fedgen/data").expanduser()


def base_root(data: DataSpec) -> Path:
    return Path(data.root).expanduser() if data.root else default_root()


def torchvision_download(name: str, root: Path) -> None:
    import torchvision.datasets as tvd

    try:
        for train in (True, False):
            if name == "mnist":
                tvd.MNIST(str(root), train=train, download=True)
            elif name == "fashion-mnist":
                tvd.FashionMNIST(str(root), train=train, download=True)
            elif name == "emnist-letters":
                tvd.EMNIST(str(root), split="letters", train=train, download=True)
            else:
                tvd.CelebA(str(root), split="all", target_type="attr", download=True)
                return
    except Exception as exc:  # network, checksum or gdown errors
        raise DatasetError(f"{name}: download into {root} failed: {exc}") from None
