"""`partition.draws: official`: the official split script's draws, sample for sample.

The test vector (`shared/reference/official-split/`, beside the repository) holds the official
script's split of Fashion-MNIST at alpha 1, ratio 0.5, 20 users; the replay test checks the
draw order of reference §2.1 step by step on a tiny label set. The test order (§2.1 step 5:
a user's labels in its Python set's iteration order) is checked against a model of CPython's
set table and on Fashion-MNIST at alpha 0.1 and 0.05, where it is not ascending for some users
(the vector, at alpha 1, has no such user).
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from fedgen.cli import main
from fedgen.data.common import DatasetError, DatasetTensors
from fedgen.data.datasets import load_dataset
from fedgen.data.official_draws import official_label_order
from fedgen.data.partition import (
    PartitionError,
    build_partition,
    dirichlet_partition,
    official_partition,
    per_user_test_split,
)
from fedgen.data_spec import DataSpec
from fedgen.fidelity import resolve
from fedgen.spec import PartitionSpec, parse_spec
from tests.support.needs import needs

VECTOR = "shared/reference/official-split/fashion-mnist-u20-alpha1.0-ratio0.5.json"
REPO = Path(__file__).resolve().parents[2]


def _vector_path() -> Path | None:
    """The test vector in `shared/` beside the repository (or beside a folder above it)."""
    for folder in REPO.parents:
        candidate = folder / VECTOR
        if candidate.is_file():
            return candidate
    return None


def _fashion_mnist() -> Any:
    try:
        return load_dataset(DataSpec(name="fashion-mnist"))
    except DatasetError:
        needs(False, "Fashion-MNIST (apt-get install dataset-fashion-mnist)")


@pytest.mark.slow  # a child process
def test_cli_json_reproduces_the_official_test_vector(tmp_path, capsys) -> None:
    """`fedgen partition SPEC --json` under the official profile gives the vector, 20/20 users."""
    path = _vector_path()
    needs(path is not None, f"../{VECTOR}")
    assert path is not None
    _fashion_mnist()
    ref = json.loads(path.read_text())
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "data: {name: fashion-mnist}\n"
        "partition: {num_users: 20, alpha: 1.0, sampling_ratio: 0.5, data_seed: 42}\n"
    )
    assert main(["partition", str(spec), "--json"]) == 0
    ours = json.loads(capsys.readouterr().out)
    assert ours.keys() == ref.keys()
    assert ours["args"] == ref["args"]
    assert len(ours["users"]) == len(ref["users"]) == 20
    for mine, theirs in zip(ours["users"], ref["users"], strict=True):
        assert mine.keys() == theirs.keys()
        # Exact: the same samples in the same storage order, and the same test slices.
        assert mine == theirs, f"user {theirs['user']} differs"


@pytest.mark.slow
def test_official_draws_give_the_official_test_set_size() -> None:
    """alpha 0.1: the official script's per-user test sets hold 5,000 samples (fedgen draws: other)."""
    ds = _fashion_mnist()
    p = PartitionSpec(num_users=20, alpha=0.1, sampling_ratio=0.5)
    official = build_partition(ds, p, "official")
    assert sum(i.size for i in official.train_indices) == 15_000
    assert sum(i.size for i in official.test_indices) == 5_000
    # Each user's test set: floor(1000 / 20) = 50 samples of each label it trains on.
    ty, vy = ds.train_y.numpy(), ds.test_y.numpy()
    for tr, te in zip(official.train_indices, official.test_indices, strict=True):
        present = np.unique(ty[tr])
        assert np.bincount(vy[te], minlength=10)[present].tolist() == [50] * present.size
        assert te.size == 50 * present.size
    other = build_partition(ds, p, "fedgen")
    assert other.fingerprint() != official.fingerprint()


# -- the draw order on a tiny label set ---------------------------------------------------------

# 3 classes of 7, 5 and 9 samples, interleaved in "file order"; 4 test samples per class.
TRAIN_Y = np.array([0, 1, 2, 2, 0, 1, 2, 0, 2, 1, 0, 2, 0, 2, 1, 0, 2, 1, 2, 0, 2], dtype=np.int64)
TEST_Y = np.array([2, 0, 1, 0, 2, 1, 1, 0, 2, 2, 0, 1], dtype=np.int64)


def _replay(seed: int, users: int, alpha: float, ratio: float, min_samples: int) -> list[list[int]]:
    """Reference §2.1 steps 1-4, written out literally from the text."""
    rnd = random.Random(seed)
    nps = np.random.RandomState(seed)
    members = {c: [i for i, y in enumerate(TRAIN_Y) if y == c] for c in range(3)}
    classes = [0, 1, 2]
    rnd.shuffle(classes)
    cap = ratio * len(TRAIN_Y) / users  # a float, never rounded
    for _ in range(10_000):
        totals = [0] * users
        stored: list[list[int]] = [[] for _ in range(users)]
        for c in classes:
            order = list(range(len(members[c])))
            nps.shuffle(order)
            if ratio < 1:
                order = order[: int(min(cap, int(ratio * len(members[c]))))]
            p = nps.dirichlet([alpha] * users)
            p = np.array([pu * (t < cap) for pu, t in zip(p, totals, strict=True)])
            p = p / p.sum()
            cuts = (np.cumsum(p) * len(order)).astype(int)[:-1]
            for u, piece in enumerate(np.split(np.array(order, dtype=int), cuts)):
                stored[u] += [members[c][int(i)] for i in piece]
                totals[u] += len(piece)
        if min(totals) >= min_samples:
            return stored
    raise AssertionError("no attempt satisfied min_samples")


@pytest.mark.parametrize(
    ("seed", "users", "alpha", "ratio", "min_samples"),
    [
        (42, 2, 1.0, 1.0, 1),
        (42, 3, 0.5, 0.5, 1),  # cap 3.5: a user holding 3 is still open
        (7, 4, 0.3, 0.8, 2),  # cap 4.2; several re-draws, the generators continue
        (0, 2, 100.0, 0.6, 5),
    ],
)
def test_official_draw_order_replays_the_reference(
    seed: int, users: int, alpha: float, ratio: float, min_samples: int
) -> None:
    """Class shuffle by Python random, per-class shuffle + Dirichlet by NumPy's legacy
    generator, float cap, class-by-class storage, re-draws continuing the generators."""
    part = official_partition(
        TRAIN_Y,
        TEST_Y,
        num_users=users,
        num_classes=3,
        alpha=alpha,
        sampling_ratio=ratio,
        min_samples=min_samples,
        seed=seed,
        max_redraws=10_000,
    )
    expected = _replay(seed, users, alpha, ratio, min_samples)
    assert [i.tolist() for i in part.train_indices] == expected


def test_redraws_continue_the_generators() -> None:
    """A re-drawn split is the generators' next attempt, not a fresh start with the same seed."""
    kw: dict[str, Any] = {
        "num_users": 4,
        "num_classes": 3,
        "alpha": 0.3,
        "sampling_ratio": 0.8,
        "seed": 7,
        "max_redraws": 10_000,
    }
    first = official_partition(TRAIN_Y, TEST_Y, min_samples=0, **kw)
    later = official_partition(TRAIN_Y, TEST_Y, min_samples=2, **kw)
    assert min(i.size for i in first.train_indices) < 2  # the first attempt is rejected
    assert min(i.size for i in later.train_indices) >= 2
    assert later.fingerprint() != first.fingerprint()


def test_storage_is_class_by_class_in_shuffled_class_order() -> None:
    """Each user's samples come in class blocks, in Python random's shuffled class order."""
    order = [0, 1, 2]
    random.Random(42).shuffle(order)
    part = official_partition(
        TRAIN_Y,
        TEST_Y,
        num_users=2,
        num_classes=3,
        alpha=1.0,
        sampling_ratio=1.0,
        min_samples=1,
        seed=42,
        max_redraws=100,
    )
    for idx in part.train_indices:
        labels = TRAIN_Y[idx].tolist()
        blocks = [c for i, c in enumerate(labels) if i == 0 or labels[i - 1] != c]
        assert blocks == [c for c in order if c in labels]


def test_test_split_takes_consecutive_slices_per_label() -> None:
    """Users in order, labels in the set's order (ascending for labels 0-2): the next
    floor(n_test / U) test samples of the label."""
    part = official_partition(
        TRAIN_Y,
        TEST_Y,
        num_users=2,
        num_classes=3,
        alpha=1.0,
        sampling_ratio=1.0,
        min_samples=1,
        seed=42,
        max_redraws=100,
    )
    by_label = {c: np.flatnonzero(TEST_Y == c).tolist() for c in range(3)}
    pointer = dict.fromkeys(range(3), 0)
    for tr, te in zip(part.train_indices, part.test_indices, strict=True):
        want: list[int] = []
        for c in set(TRAIN_Y[tr].tolist()):
            want += by_label[c][pointer[c] : pointer[c] + 2]  # floor(4 / 2)
            pointer[c] += 2
        assert te.tolist() == want


def test_another_seed_is_the_same_procedure_with_other_draws() -> None:
    """data_seed seeds both generators: deterministic, and not the seed-42 split."""
    kw: dict[str, Any] = {
        "num_users": 3,
        "num_classes": 3,
        "alpha": 0.5,
        "sampling_ratio": 1.0,
        "min_samples": 1,
        "max_redraws": 1000,
    }
    a = official_partition(TRAIN_Y, TEST_Y, seed=5, **kw)
    assert a.fingerprint() == official_partition(TRAIN_Y, TEST_Y, seed=5, **kw).fingerprint()
    assert a.fingerprint() != official_partition(TRAIN_Y, TEST_Y, seed=42, **kw).fingerprint()
    assert [i.tolist() for i in a.train_indices] == _replay(5, 3, 0.5, 1.0, 1)
    # fedgen's draws: the same procedure from one numpy Generator, hence another split.
    b = dirichlet_partition(TRAIN_Y, TEST_Y, seed=5, **kw)
    assert b.fingerprint() != a.fingerprint()


def test_emnist_variant_cap_is_not_int_wrapped() -> None:
    """The EMNIST script works only while int(ratio x class size) is below its float cap."""
    y = np.repeat(np.arange(3), 10)  # 3 classes x 10
    kw: dict[str, Any] = {
        "num_classes": 3,
        "alpha": 1.0,
        "min_samples": 1,
        "seed": 42,
        "max_redraws": 100,
    }
    # cap = 1.0 x 30 / 2 = 15 > int(1.0 x 10): ratio 1 keeps everything, like the MNIST script.
    mnist = official_partition(y, y, num_users=2, sampling_ratio=1.0, variant="mnist", **kw)
    emnist = official_partition(y, y, num_users=2, sampling_ratio=1.0, variant="emnist", **kw)
    assert mnist.fingerprint() == emnist.fingerprint()
    # cap = 0.5 x 30 / 4 = 3.75 < int(0.5 x 10) = 5: the MNIST script keeps int(3.75) = 3,
    # the EMNIST script would slice with the float and fail, so we refuse.
    part = official_partition(y, y, num_users=4, sampling_ratio=0.5, variant="mnist", **kw)
    assert sum(i.size for i in part.train_indices) == 9
    with pytest.raises(PartitionError, match="not wrapped in int"):
        official_partition(y, y, num_users=4, sampling_ratio=0.5, variant="emnist", **kw)


def test_draws_follow_the_profile_unless_set() -> None:
    """None = the profile's choice: official under 'official', fedgen under 'paper'."""
    assert resolve(parse_spec({})).draws == "official"
    assert resolve(parse_spec({"fidelity": {"profile": "paper"}})).draws == "fedgen"
    spec = parse_spec({"partition": {"draws": "fedgen"}})
    assert resolve(spec).draws == "fedgen"
    spec = parse_spec({"fidelity": {"profile": "paper"}, "partition": {"draws": "official"}})
    assert resolve(spec).draws == "official"


def test_build_partition_uses_the_spec_or_the_default() -> None:
    """build_partition: `partition.draws` wins over the profile default it is given."""
    ds = DatasetTensors(
        "synthetic",
        torch.zeros(TRAIN_Y.size, 1, 2, 2),
        torch.from_numpy(TRAIN_Y),
        torch.zeros(TEST_Y.size, 1, 2, 2),
        torch.from_numpy(TEST_Y),
        3,
    )
    p = PartitionSpec(num_users=2, alpha=1.0, sampling_ratio=1.0, min_samples=1, data_seed=42)
    off = build_partition(ds, p, "official")
    assert [i.tolist() for i in off.train_indices] == _replay(42, 2, 1.0, 1.0, 1)
    assert build_partition(ds, p).fingerprint() != off.fingerprint()  # default: fedgen
    pinned = p.model_copy(update={"draws": "official"})
    assert build_partition(ds, pinned, "fedgen").fingerprint() == off.fingerprint()


# -- the test order: a user's labels in CPython's set iteration order (§2.1 step 5) ------------


def _cpython_set_order(added: list[int]) -> list[int]:
    """Iteration order of a CPython set of small non-negative ints `add`-ed in this order.

    A model of Objects/setobject.c for this case: hash(i) == i; 8 slots to start; a new key
    tries slot ``hash & mask``, then the slots after it while ``i + 9 <= mask`` (LINEAR_PROBES,
    never in 8 slots), then ``i = (5 i + 1 + perturb) & mask`` with ``perturb >>= 5`` each
    round; once ``fill * 5 >= mask * 3`` the table is rebuilt with the smallest power of two
    (from 8) above ``4 x used``, re-inserting the old slots in order; iteration is slot order.
    """
    table: list[int | None] = [None] * 8

    def insert(tab: list[int | None], key: int) -> bool:
        mask = len(tab) - 1
        i, perturb = key & mask, key
        while True:
            for j in range(i, i + (9 if i + 9 <= mask else 0) + 1):
                if tab[j] is None:
                    tab[j] = key
                    return True
                if tab[j] == key:
                    return False
            perturb >>= 5
            i = (5 * i + 1 + perturb) & mask

    used = 0
    for key in added:
        if insert(table, key):
            used += 1
            if used * 5 >= (len(table) - 1) * 3:  # no deletions: fill == used
                size = 8
                while size <= 4 * used:
                    size <<= 1
                old, table = table, [None] * size
                for k in old:
                    if k is not None:
                        insert(table, k)
    return [k for k in table if k is not None]


def test_label_order_is_cpython_set_order_not_ascending() -> None:
    """The issue's example: classes added 8, 9, 4, 0 iterate in that order (0 collides with 8
    in slot 0, probes 8's neighbour 9's slot 1, lands in slot 6); {3, 8} iterates 8, 3; five or
    more labels below 32 get a 32-slot table and iterate in ascending order."""
    assert official_label_order([8, 9, 4, 0]) == [8, 9, 4, 0] != sorted([8, 9, 4, 0])
    assert official_label_order([3, 8]) == [8, 3]
    assert official_label_order([9, 8, 2, 5, 0]) == [0, 2, 5, 8, 9]
    # Every stored sample's label may be passed: re-adding a label changes nothing.
    assert official_label_order([8, 8, 9, 9, 9, 4, 0, 0]) == [8, 9, 4, 0]
    assert _cpython_set_order([8, 9, 4, 0]) == [8, 9, 4, 0]


def test_this_interpreter_iterates_sets_as_the_model_says() -> None:
    """Building a real set is faithful on this interpreter: it agrees with the model of
    CPython's table for every insertion order of up to 5 of 10 labels (resizes included) and
    for sets of EMNIST's 26 labels."""
    for n in range(1, 6):
        for added in itertools.permutations(range(10), n):
            assert official_label_order(added) == _cpython_set_order(list(added)), added
    rng = random.Random(0)
    for _ in range(2000):
        added = rng.sample(range(26), rng.randint(1, 26))
        assert official_label_order(added) == _cpython_set_order(added), added


def test_test_split_visits_labels_in_the_given_order() -> None:
    """per_user_test_split: `official` follows the set of the labels in storage order, the
    default sorts them; the samples are the same, only their order changes."""
    # user 0 stores classes 8, 9, 4, 0 (in that order), user 1 classes 4, 8; 2 test samples each.
    train_y = np.array([8, 9, 9, 4, 0, 0, 4, 8], dtype=np.int64)
    train_idx = [np.array([0, 1, 2, 3, 4, 5]), np.array([6, 7])]
    test_y = np.repeat(np.arange(10), 2)  # test sample 2c, 2c + 1 have label c
    official = per_user_test_split(train_y, test_y, train_idx, 10, label_order="official")
    ascending = per_user_test_split(train_y, test_y, train_idx, 10)
    assert test_y[official[0]].tolist() == [8, 9, 4, 0]  # one sample per label: floor(2 / 2)
    assert test_y[ascending[0]].tolist() == [0, 4, 8, 9]
    assert test_y[official[1]].tolist() == [8, 4]  # {4, 8}: 8 sits in slot 0
    assert test_y[ascending[1]].tolist() == [4, 8]
    for a, b in zip(official, ascending, strict=True):
        assert sorted(a.tolist()) == sorted(b.tolist())


# Users whose test labels do not come in ascending order, with data_seed 42 (measured).
NOT_ASCENDING = {
    0.1: {1: [8, 9, 4, 0], 17: [8, 1, 3, 6], 18: [9, 3, 5, 6]},
    0.05: {1: [8, 3], 2: [8, 2], 4: [8, 9, 2, 0], 11: [9, 2], 18: [8, 0, 2, 5]},
}


@pytest.mark.parametrize("alpha", [0.1, 0.05])
def test_fashion_mnist_test_order_follows_the_label_set(alpha: float) -> None:
    """Fashion-MNIST, 20 users, ratio 0.5: each user's test samples come label by label in the
    order the script's set of its labels iterates. At alpha 0.1 user 1 stores classes 8, 9, 4,
    0 and gets its test samples in that order, not ascending; every user keeps the samples the
    ascending order gave it."""
    ds = _fashion_mnist()
    p = PartitionSpec(num_users=20, alpha=alpha, sampling_ratio=0.5)
    part = build_partition(ds, p, "official")
    ty, vy = ds.train_y.numpy(), ds.test_y.numpy()
    ascending = per_user_test_split(ty, vy, part.train_indices, 10)
    not_ascending: dict[int, list[int]] = {}
    for u, (tr, te) in enumerate(zip(part.train_indices, part.test_indices, strict=True)):
        classes_added = list(dict.fromkeys(ty[tr].tolist()))  # first appearances, in order
        labels = vy[te].tolist()
        blocks = [c for i, c in enumerate(labels) if i == 0 or labels[i - 1] != c]
        assert blocks == _cpython_set_order(classes_added), u
        assert labels == [c for c in blocks for _ in range(50)]
        if blocks != sorted(blocks):
            not_ascending[u] = blocks
        # Only the order changed: the same test samples as the ascending order's.
        assert sorted(te.tolist()) == sorted(ascending[u].tolist()), u
    assert not_ascending == NOT_ASCENDING[alpha]
    if alpha == 0.1:
        assert list(dict.fromkeys(ty[part.train_indices[1]].tolist())) == [8, 9, 4, 0]
