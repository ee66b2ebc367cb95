"""`synthetic-fedprox`: the Synthetic(α, β) task of the FedProx paper, generated from a seed.

Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, "Federated Optimization in Heterogeneous
Networks", MLSys 2020, §5.1 and its generator (``data/synthetic_*/generate_niid.py`` of the
authors' repository). For user k:

* its model: W_k ~ N(u_k, 1) (60 x 10), b_k ~ N(u_k, 1) (10), u_k ~ N(0, α);
* its inputs: x ~ N(v_k, Σ), Σ diagonal with Σ_jj = j^(−1.2) (j = 1..60),
  v_k ~ N(B_k, 1) (60), B_k ~ N(0, β);
* its labels: y = argmax softmax(W_k^T x + b_k) (10 classes);
* its size: lognormal(4, 2) + 50 samples (the paper's power law), capped at `MAX_PER_USER` so
  that 10,000 users stay in memory; 90% train, 10% test, as the authors' split.

As the authors' code does, α and β are the standard deviations NumPy is given
(``np.random.normal(0, alpha)``); the paper writes them as variances. α controls how much the
users' models differ, β how much their inputs do; Synthetic(0, 0) still differs per user
(each draws its own W_k and v_k). The users' heterogeneity is given by construction: the
partition is the users as generated (`partition.num_users` of them), no Dirichlet draw, so
`partition.alpha`, `sampling_ratio` and `min_samples` do not apply.

The draws come from one ``numpy.random.default_rng(data_seed)``, user after user, so the same
seed gives the same data on every host (not the authors' exact numbers: their script seeds
NumPy's global generator). Inputs are float32 of shape (N, 1, 1, 60), the (C, H, W) every
model reads; no files.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from fedgen.data.common import DatasetTensors

if TYPE_CHECKING:
    from fedgen.data_spec import DataSpec
    from fedgen.spec import PartitionSpec

FEATURES = 60
CLASSES = 10
MIN_PER_USER = 50
MAX_PER_USER = 1000
TRAIN_SHARE = 0.9
DEFAULT_ALPHA = 1.0
DEFAULT_BETA = 1.0

FloatArray = np.ndarray[Any, np.dtype[np.float32]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]


def user_sizes(rng: np.random.Generator, num_users: int) -> IntArray:
    """Samples of each user: lognormal(4, 2) + 50, capped at `MAX_PER_USER`."""
    sizes = rng.lognormal(4.0, 2.0, num_users).astype(np.int64) + MIN_PER_USER
    return np.minimum(sizes, MAX_PER_USER)


def make_fedprox(
    num_users: int, alpha: float = DEFAULT_ALPHA, beta: float = DEFAULT_BETA, seed: int = 0
) -> tuple[FloatArray, IntArray, IntArray, FloatArray, IntArray, IntArray]:
    """(train_x, train_y, train_user, test_x, test_y, test_user): (N, 60) inputs, labels and
    each sample's user, users in order, every user's samples together."""
    rng = np.random.default_rng(seed)
    sizes = user_sizes(rng, num_users)
    u = rng.normal(0.0, alpha, num_users)  # model means
    big_b = rng.normal(0.0, beta, num_users)  # input means' means
    sd = np.power(np.arange(1, FEATURES + 1, dtype=np.float64), -1.2) ** 0.5
    parts: dict[str, list[Any]] = {k: [] for k in ("tx", "ty", "tu", "vx", "vy", "vu")}
    for k in range(num_users):
        v = rng.normal(big_b[k], 1.0, FEATURES)
        w = rng.normal(u[k], 1.0, (FEATURES, CLASSES))
        b = rng.normal(u[k], 1.0, CLASSES)
        x = v + rng.standard_normal((int(sizes[k]), FEATURES)) * sd
        y = np.argmax(x @ w + b, axis=1).astype(np.int64)  # softmax keeps the argmax
        cut = int(TRAIN_SHARE * sizes[k])
        x = x.astype(np.float32)  # as stored; float64 for 10,000 users would double the peak
        parts["tx"].append(x[:cut])
        parts["ty"].append(y[:cut])
        parts["tu"].append(np.full(cut, k, dtype=np.int64))
        parts["vx"].append(x[cut:])
        parts["vy"].append(y[cut:])
        parts["vu"].append(np.full(len(y) - cut, k, dtype=np.int64))
    out = {k: np.concatenate(v) for k, v in parts.items()}
    return (
        out["tx"].astype(np.float32),
        out["ty"],
        out["tu"],
        out["vx"].astype(np.float32),
        out["vy"],
        out["vu"],
    )


@functools.lru_cache(maxsize=2)
def _load(num_users: int, alpha: float, beta: float, seed: int) -> DatasetTensors:
    import torch

    tx, ty, tu, vx, vy, vu = make_fedprox(num_users, alpha, beta, seed)
    return DatasetTensors(
        "synthetic-fedprox",
        torch.from_numpy(tx).view(-1, 1, 1, FEATURES),
        torch.from_numpy(ty),
        torch.from_numpy(vx).view(-1, 1, 1, FEATURES),
        torch.from_numpy(vy),
        CLASSES,
        train_groups=tu,
        test_groups=vu,
    )


def load_synthetic_fedprox(data: DataSpec, partition: PartitionSpec) -> DatasetTensors:
    """The registry's loader: `partition.num_users` users from `partition.data_seed`."""
    alpha = DEFAULT_ALPHA if data.fedprox_alpha is None else data.fedprox_alpha
    beta = DEFAULT_BETA if data.fedprox_beta is None else data.fedprox_beta
    return _load(partition.num_users, alpha, beta, partition.data_seed)
