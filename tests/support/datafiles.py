"""Small data files in the exact layouts the loaders read: MNIST-like IDX files and a folder
dataset of drawn shapes (npz or images)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np


def write_idx(path: Path, arr: np.ndarray, gz: bool = False) -> Path:
    """Write a uint8 array as an IDX file (magic 0x0000080N, big-endian dims)."""
    body = bytes([0, 0, 8, arr.ndim]) + np.array(arr.shape, dtype=">i4").tobytes()
    body += arr.astype(np.uint8).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(body))
    else:
        path.write_bytes(body)
    return path


def shape_images(label: np.ndarray, seed: int) -> np.ndarray:
    """(N, SIDE, SIDE) uint8: dark noise with a bright band whose place is the class."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 80, size=(len(label), SIDE, SIDE), dtype=np.uint8)
    for i, c in enumerate(label):
        x[i, 5 * c : 5 * c + 5, :] = 255
    return x


def shape_labels(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64) % len(CLASSES)


MNIST_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)


def write_mnist_like(
    raw: Path, names: tuple[str, ...], labels: tuple[np.ndarray, np.ndarray], gz: bool
) -> None:
    rng = np.random.default_rng(0)
    for i, y in enumerate(labels):
        x = rng.integers(0, 256, size=(y.size, 28, 28))
        x[0, 0, 0], x[0, 0, 1] = 0, 255
        write_idx(raw / names[2 * i], x, gz)
        write_idx(raw / names[2 * i + 1], y, gz)


SIDE = 16


CLASSES = ("circle", "square", "stripe")


def write_npz(path: Path, n_train: int = 90, n_test: int = 30) -> Path:
    path.mkdir(parents=True)
    for split, n, seed in (("train", n_train, 1), ("test", n_test, 2)):
        y = shape_labels(n)
        np.savez(path / f"{split}.npz", x=shape_images(y, seed), y=y)
    return path
