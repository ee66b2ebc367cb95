"""`synthetic-fedprox`: Synthetic(α, β) of the FedProx paper, generated from data_seed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedgen.data.datasets import load_dataset
from fedgen.data.fedprox import FEATURES, MAX_PER_USER, MIN_PER_USER, make_fedprox
from fedgen.data.partition import build_partition
from fedgen.data.registry import get_dataset
from fedgen.data_spec import DataSpec
from fedgen.spec import PartitionSpec, SpecError, parse_spec


def test_reproducible_from_its_seed_and_other_seeds_differ() -> None:
    a: tuple[Any, ...] = make_fedprox(20, 1.0, 1.0, seed=3)
    b: tuple[Any, ...] = make_fedprox(20, 1.0, 1.0, seed=3)
    c: tuple[Any, ...] = make_fedprox(20, 1.0, 1.0, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0][:50], c[0][:50])


def test_users_sizes_and_labels_follow_the_papers_description() -> None:
    train_x, train_y, train_u, test_x, test_y, test_u = make_fedprox(300, 1.0, 1.0, seed=0)
    assert train_x.shape[1] == FEATURES
    assert set(np.unique(train_y)) <= set(range(10))
    sizes = np.bincount(train_u, minlength=300) + np.bincount(test_u, minlength=300)
    # Power law: lognormal(4, 2) + 50 (capped): every user >= 50, a heavy right tail.
    assert sizes.min() >= MIN_PER_USER
    assert sizes.max() <= MAX_PER_USER
    median = float(np.median(sizes))
    assert 70 < median < 160  # e^4 + 50 = 104.6
    assert sizes.max() > 5 * median
    # 90% / 10% per user.
    assert np.all(np.abs(np.bincount(test_u, minlength=300) - 0.1 * sizes) <= 1)
    # Heterogeneous by construction: a user's labels concentrate on few classes (its own
    # model W_k, b_k; its own input mean v_k), unlike the population's.
    top = []
    for k in range(300):
        counts = np.bincount(train_y[train_u == k], minlength=10)
        top.append(counts.max() / counts.sum())
    population = np.bincount(train_y, minlength=10)
    assert np.mean(top) > 0.5 > population.max() / population.sum()
    # Synthetic(0, 0) is far less heterogeneous than Synthetic(1, 1) in its inputs.
    x0, _, u0, *_ = make_fedprox(300, 0.0, 0.0, seed=0)
    spread = [
        np.linalg.norm(x[u == k].mean(0))
        for x, u in ((x0, u0), (train_x, train_u))
        for k in range(300)
    ]
    assert np.mean(spread[:300]) < np.mean(spread[300:])


def test_loads_as_natural_users_without_a_dirichlet_draw() -> None:
    data = DataSpec(name="synthetic-fedprox", fedprox_alpha=0.5, fedprox_beta=0.5)
    partition = PartitionSpec(num_users=30, data_seed=5, alpha=0.01)
    ds = load_dataset(data, partition)
    assert ds.train_x.shape[1:] == (1, 1, FEATURES)
    assert ds.num_classes == 10
    part = build_partition(ds, partition)
    assert part.num_users == 30
    assert all(len(t) >= 45 for t in part.train_indices)
    # partition.alpha does not apply: another value draws the same users.
    other = PartitionSpec(num_users=30, data_seed=5, alpha=100.0)
    assert build_partition(ds, other).fingerprint() == part.fingerprint()
    decl = get_dataset("synthetic-fedprox")
    assert (decl.shape, decl.classes, decl.files_in_spec) == ((1, 1, FEATURES), 10, False)


def test_fedprox_fields_only_for_its_dataset() -> None:
    with pytest.raises(SpecError, match="data.fedprox_alpha"):
        parse_spec({"data": {"name": "synthetic", "fedprox_alpha": 1.0}})
    with pytest.raises(SpecError, match="data.fedprox_beta"):
        parse_spec({"data": {"name": "synthetic-fedprox", "fedprox_beta": -1}})
