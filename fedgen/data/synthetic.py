"""A tiny, deterministic, learnable image task for tests (no files, no network).

Every class has a smooth random 28x28 prototype in [-1, 1]; a sample is its class
prototype scaled by a random contrast plus Gaussian pixel noise, clipped to [-1, 1].
A small CNN separates the classes well within a few federated rounds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["make_synthetic"]

FloatArray = np.ndarray[Any, np.dtype[np.float32]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]


def _samples(
    protos: FloatArray, n: int, rng: np.random.Generator, noise: float
) -> tuple[FloatArray, IntArray]:
    num_classes = protos.shape[0]
    y = rng.permutation(np.arange(n, dtype=np.int64) % num_classes)
    contrast = rng.uniform(0.7, 1.0, size=(n, 1, 1, 1))
    x = protos[y] * contrast + rng.normal(0.0, noise, size=(n, 1, 28, 28))
    return np.clip(x, -1.0, 1.0).astype(np.float32), y.astype(np.int64)


def make_synthetic(
    num_classes: int, num_train: int, seed: int = 0, noise: float = 0.4
) -> tuple[FloatArray, IntArray, FloatArray, IntArray]:
    """Return ``(train_x, train_y, test_x, test_y)`` of the synthetic task.

    Parameters
    ----------
    num_classes
        Number of classes (labels ``0..num_classes-1``, balanced).
    num_train
        Training samples; the test set has ``max(num_classes, num_train // 5)`` samples.
    seed
        Seeds prototypes, labels and noise.
    noise
        Standard deviation of the per-pixel Gaussian noise.
    """
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(-1.0, 1.0, size=(num_classes, 1, 7, 7))
    protos = np.kron(coarse, np.ones((1, 1, 4, 4))).astype(np.float32)
    train_x, train_y = _samples(protos, num_train, rng, noise)
    test_x, test_y = _samples(protos, max(num_classes, num_train // 5), rng, noise)
    return train_x, train_y, test_x, test_y
