"""Generator checkpoints -> per-class latent samples -> 2-D PCA points (for the Inspect page)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pandas as pd

from dashboard.tables import pca_2d

LOADER_MISSING = (
    "The generator loader is not available in this installation "
    "(fedgen.models.generator.load_generator_checkpoint / sample_latents)."
)


def generator_api() -> tuple[Callable[..., object], Callable[..., object]] | None:
    """fedgen's (load_generator_checkpoint, sample_latents), or None if not installed."""
    try:
        from fedgen.models.generator import (
            load_generator_checkpoint,
            sample_latents,
        )
    except ImportError:
        return None
    return load_generator_checkpoint, sample_latents


def latent_points(blobs: dict[int, bytes], per_class: int, seed: int) -> pd.DataFrame:
    """Sample `per_class` latents per class from each round's generator; PCA each round to 2-D."""
    api = generator_api()
    if api is None:
        raise RuntimeError(LOADER_MISSING)
    load, sample = api
    frames = []
    for rnd, data in sorted(blobs.items()):
        gen = load(data)
        z, y = cast(tuple[Any, Any], sample(gen, per_class, seed))
        z_np = z.detach().cpu().numpy() if hasattr(z, "detach") else np.asarray(z)
        y_np = y.detach().cpu().numpy() if hasattr(y, "detach") else np.asarray(y)
        pc = pca_2d(z_np)
        frames.append(pd.DataFrame({"pc1": pc[:, 0], "pc2": pc[:, 1], "label": y_np, "round": rnd}))
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["pc1", "pc2", "label", "round"])
    )
