"""A 3x32x32 synthetic dataset for the model tests: the `synthetic` task's images padded to
32x32 and repeated over three channels, registered for as long as a test needs it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from fedgen.data.common import DatasetTensors
from fedgen.data.decl import DatasetDecl
from fedgen.data.registry import register_dataset, unregister_dataset
from fedgen.data.synthetic import make_synthetic

NAME = "synthetic-rgb32"
CLASSES = 4


def _rgb32(x: np.ndarray[Any, Any]) -> torch.Tensor:
    padded = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))
    return torch.from_numpy(np.repeat(padded, 3, axis=1).astype(np.float32))


def _load(data: Any, partition: Any) -> DatasetTensors:
    samples = data.synthetic_samples
    tx, ty, vx, vy = make_synthetic(CLASSES, samples, partition.data_seed)
    return DatasetTensors(
        NAME, _rgb32(tx), torch.from_numpy(ty), _rgb32(vx), torch.from_numpy(vy), CLASSES
    )


DECL = DatasetDecl(NAME, "Synthetic RGB 32", (3, 32, 32), CLASSES, _load)


@contextmanager
def rgb32_dataset() -> Iterator[str]:
    """Register the dataset for the block; yields its name."""
    register_dataset(DECL)
    try:
        yield NAME
    finally:
        unregister_dataset(NAME)
