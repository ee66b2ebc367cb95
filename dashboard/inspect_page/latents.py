"""Generator checkpoints -> per-class latent samples -> 2-D PCA points (for the Inspect page),
and the Inspect figures' layout: every class named (a legend in rows above the panels, not
a scrolled column; the heatmap's class axis one tick per class)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pandas as pd
import plotly.graph_objects as go

LOADER_MISSING = (
    "The generator loader is not available in this installation "
    "(fedgen.models.generator.load_generator_checkpoint / sample_latents)."
)


def pca_2d(z: np.ndarray) -> np.ndarray:
    """Project rows of `z` (N x d) on their first two principal components (numpy SVD)."""
    x = np.asarray(z, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0:
        return np.zeros((0, 2))
    x = x - x.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    proj: np.ndarray = np.asarray(x @ vt[:2].T)
    if proj.shape[1] < 2:
        proj = np.pad(proj, ((0, 0), (0, 2 - proj.shape[1])))
    return proj


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


def every_class_in_legend(fig: go.Figure) -> go.Figure:
    """The latent scatter's legend in rows above the panels: every class shows (a column
    beside them holds about eight in the chart's height and scrolls the rest out of sight)."""
    classes = sum(1 for t in fig.data if t.showlegend is not False)
    rows = -(-classes // 10)  # about ten entries per row across the chart's width
    return fig.update_layout(
        legend={
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": 1.0,
            "yanchor": "bottom",
            "title": {"text": ""},
            "itemsizing": "constant",
        },
        margin={"t": 60 + 24 * rows},
        height=420 + 24 * rows,
    )


def every_class_on_axis(fig: go.Figure) -> go.Figure:
    """One tick per class on the label heatmap's class axis (categories, not 0-2-4-...)."""
    return fig.update_xaxes(type="category", dtick=1)
