"""Writing the Shapes files: numpy only, seeded, atomic (two workers may race to write them)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

CLASSES = ("circle", "square", "triangle")
SIDE = 28
TRAIN, TEST = 3000, 600


def draw(labels: np.ndarray[Any, Any], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """uint8 (N, SIDE, SIDE): one filled shape per image, random place and size, on noise."""
    yy, xx = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
    out = np.empty((len(labels), SIDE, SIDE), dtype=np.uint8)
    for i, label in enumerate(labels):
        r = rng.uniform(5.0, 9.0)
        cy, cx = rng.uniform(r + 1, SIDE - r - 1, size=2)
        if label == 0:  # circle
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= r**2
        elif label == 1:  # square
            mask = (np.abs(yy - cy) <= r * 0.8) & (np.abs(xx - cx) <= r * 0.8)
        else:  # triangle, apex up: wider towards the bottom
            mask = (yy >= cy - r) & (yy <= cy + r) & (np.abs(xx - cx) <= (yy - (cy - r)) / 2)
        noise = rng.integers(0, 60, size=(SIDE, SIDE))
        out[i] = np.where(mask, rng.integers(180, 256), noise).astype(np.uint8)
    return out


def generate(path: Path, seed: int = 0) -> Path:
    """Write ``train.npz`` and ``test.npz`` (x, y) into `path`, unless another process did.

    Written into a temporary folder beside `path`, then renamed into place: a reader never
    sees half a dataset.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        for split, n in (("train", TRAIN), ("test", TEST)):
            y = rng.permutation(np.arange(n, dtype=np.int64) % len(CLASSES))
            np.savez(tmp / f"{split}.npz", x=draw(y, rng), y=y)
        try:
            os.rename(tmp, path)
        except OSError:  # `path` exists: another process won the race, or a partial copy
            if not (path / "train.npz").is_file() or not (path / "test.npz").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path
