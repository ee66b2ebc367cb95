"""A split as JSON in the layout of the reference test vectors (`fedgen partition SPEC --json`).

The layout is that of ``../shared/reference/official-split/*.json``: top-level ``what``,
``args`` (the official script's argument names), ``seeds``, ``indices`` and ``users``, one
entry per user with ``user`` (``f_00000``...), ``train_n``, ``train_hist``, ``test_n``,
``test_hist``, ``train_indices`` and ``test_indices``. Indices are positions in the dataset
files, in their stored order; each user's lists are in the order the split stores them.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from fedgen.data.common import DatasetTensors
from fedgen.data.partition import Partition

__all__ = ["split_document"]


def split_document(
    ds: DatasetTensors,
    part: Partition,
    *,
    alpha: float,
    sampling_ratio: float,
    min_samples: int,
    data_seed: int,
    draws: Literal["official", "fedgen"] | None,
) -> dict[str, Any]:
    """Return the JSON-ready document of `part` over `ds` (`draws` None: a natural split)."""
    train_y = ds.train_y.numpy()
    test_y = ds.test_y.numpy()
    c = ds.num_classes

    def hist(y: np.ndarray[Any, Any], idx: np.ndarray[Any, Any]) -> list[int]:
        return [int(v) for v in np.bincount(y[idx], minlength=c)[:c]]

    if draws == "official":
        how = "the official split script's draws (Python random + NumPy legacy RandomState)"
        seeds = f"Python random.Random({data_seed}) and numpy.random.RandomState({data_seed})"
    elif draws == "fedgen":
        how = "the official procedure with fedgen's draws (one NumPy Generator)"
        seeds = f"numpy.random.default_rng({data_seed})"
    else:
        how = "the dataset's natural groups"
        seeds = f"data_seed {data_seed}"
    return {
        "what": f"Per-user sample indices of fedgen's split of {ds.name}: {how}",
        "args": {
            "n_class": c,
            "sampling_ratio": float(sampling_ratio),
            "alpha": float(alpha),
            "n_user": part.num_users,
            "min_sample": min_samples,
            "unknown_test": 0,
        },
        "seeds": seeds,
        "indices": f"train_indices index the {train_y.size:,}-sample {ds.name} training set, "
        f"test_indices the {test_y.size:,}-sample test set (order of the dataset files), "
        "in the order the split stores the samples",
        "users": [
            {
                "user": f"f_{u:05d}",
                "train_n": int(tr.size),
                "train_hist": hist(train_y, tr),
                "test_n": int(te.size),
                "test_hist": hist(test_y, te),
                "train_indices": [int(i) for i in tr],
                "test_indices": [int(i) for i in te],
            }
            for u, (tr, te) in enumerate(zip(part.train_indices, part.test_indices, strict=True))
        ],
    }
