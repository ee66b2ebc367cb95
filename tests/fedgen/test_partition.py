"""Tests of fedgen.data.partition: the official Dirichlet split and the natural group split."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch

from fedgen.data.common import DatasetTensors
from fedgen.data.datasets import load_dataset
from fedgen.data.partition import (
    Partition,
    PartitionError,
    build_partition,
    dirichlet_partition,
    group_partition,
    per_user_test_split,
)
from fedgen.data_spec import DataSpec
from fedgen.spec import PartitionSpec

# 10 classes x 100 train samples, 10 classes x 23 test samples, interleaved.
TRAIN_Y = np.arange(1000) % 10
TEST_Y = np.arange(230) % 10


def _split(seed: int = 0, **kw: Any) -> Partition:
    args: dict[str, Any] = {
        "num_users": 4,
        "num_classes": 10,
        "alpha": 0.5,
        "sampling_ratio": 0.5,
        "min_samples": 5,
        "seed": seed,
        "max_redraws": 100,
    }
    args.update(kw)
    return dirichlet_partition(TRAIN_Y, TEST_Y, **args)


def test_dirichlet_counts_cap_and_minimum() -> None:
    part = _split()
    sizes = [i.size for i in part.train_indices]
    # per class int(min(125, int(0.5 * 100))) = 50 samples are kept
    assert sum(sizes) == 500
    allidx = np.concatenate(part.train_indices)
    assert np.unique(allidx).size == 500
    assert np.all(np.bincount(TRAIN_Y[allidx], minlength=10) == 50)
    # cap 0.5 * 1000 / 4 = 125 is checked before each class: at most one class share above it
    assert max(sizes) < 125 + 50
    assert min(sizes) >= 5
    assert all(i.dtype == np.int64 for i in part.train_indices + part.test_indices)
    hist = part.label_histogram(TRAIN_Y)
    assert hist.shape == (4, 10)
    assert hist.dtype == np.int64
    assert hist.sum(axis=1).tolist() == sizes


def test_dirichlet_cap_stops_capped_users() -> None:
    # One user and ratio 1: the cap is the whole set, the user gets everything.
    part = _split(num_users=1, sampling_ratio=1.0)
    assert part.train_indices[0].size == 1000


def test_dirichlet_seeded() -> None:
    a, b, c = _split(1), _split(1), _split(2)
    assert a.fingerprint() == b.fingerprint()
    assert len(a.fingerprint()) == 16
    assert a.fingerprint() != c.fingerprint()
    assert any(
        not np.array_equal(x, y) for x, y in zip(a.test_indices, c.test_indices, strict=True)
    )


def test_dirichlet_test_split_label_matched() -> None:
    part = _split(3, num_users=5, alpha=0.1)
    for tr, te in zip(part.train_indices, part.test_indices, strict=True):
        labels = np.unique(TRAIN_Y[tr])
        assert set(np.unique(TEST_Y[te]).tolist()) == set(labels.tolist())
        # floor(23 / 5) = 4 test samples per present label
        assert np.all(np.bincount(TEST_Y[te], minlength=10)[labels] == 4)
        assert te.size == 4 * labels.size


def test_per_user_test_split_by_hand() -> None:
    test_y = np.array([0, 1, 0, 2, 0, 1, 0, 2, 2, 0])
    train_y = np.array([0, 2, 0, 1])
    # user 0 holds labels {0, 2}, user 1 holds {0, 1}; floor(n/2): label0 2, label1 1, label2 1
    train_idx = [np.array([1, 0]), np.array([3, 2])]
    out = per_user_test_split(train_y, test_y, train_idx, 3)
    assert out[0].tolist() == [0, 2, 3]
    assert out[1].tolist() == [4, 6, 1]


def test_train_order_not_sorted_and_json() -> None:
    part = _split()
    assert any(np.any(np.diff(i) < 0) for i in part.train_indices)
    d = json.loads(json.dumps(part.to_dict()))
    assert d["total_train"] == 500
    assert d["num_users"] == 4
    assert d["fingerprint"] == part.fingerprint()


def test_tiny_alpha_does_not_break() -> None:
    part = _split(5, num_users=10, alpha=0.001, min_samples=1, max_redraws=1000)
    assert sum(i.size for i in part.train_indices) == 500


def test_impossible_split_raises() -> None:
    with pytest.raises(PartitionError, match=r"alpha=0\.01.*num_users=50.*min_samples=100"):
        _split(num_users=50, alpha=0.01, min_samples=100, max_redraws=3)
    with pytest.raises(PartitionError):
        dirichlet_partition(
            np.array([0, 5]),
            np.array([0]),
            num_users=1,
            num_classes=2,
            alpha=1.0,
            sampling_ratio=1.0,
            min_samples=1,
            seed=0,
            max_redraws=1,
        )


def test_group_partition() -> None:
    part = group_partition(np.array([1, 0, 1, 2]), np.array([2, 0, 1]), num_users=3)
    assert [i.tolist() for i in part.train_indices] == [[1], [0, 2], [3]]
    assert [i.tolist() for i in part.test_indices] == [[1], [2], [0]]
    with pytest.raises(PartitionError):
        group_partition(np.array([0, 0]), np.array([0]), num_users=2)
    with pytest.raises(PartitionError):
        group_partition(np.array([0, 3]), np.array([0]), num_users=2)


def test_build_partition_synthetic_and_groups() -> None:
    spec = PartitionSpec(num_users=5, alpha=1.0, min_samples=5, data_seed=7)
    ds = load_dataset(DataSpec(name="synthetic", synthetic_samples=500), spec)
    part = build_partition(ds, spec)
    assert part.num_users == 5
    assert part.num_classes == 10
    assert part.fingerprint() == build_partition(ds, spec).fingerprint()
    other = build_partition(ds, spec.model_copy(update={"data_seed": 8}))
    assert other.fingerprint() != part.fingerprint()

    x = torch.zeros(4, 3, 84, 84)
    grouped = DatasetTensors(
        "celeba",
        x,
        torch.tensor([0, 1, 1, 0]),
        x[:2],
        torch.tensor([1, 0]),
        2,
        np.array([0, 1, 1, 0]),
        np.array([1, 0]),
    )
    gp = build_partition(grouped, PartitionSpec(num_users=2))
    assert [i.tolist() for i in gp.train_indices] == [[0, 3], [1, 2]]
    assert [i.tolist() for i in gp.test_indices] == [[1], [0]]
