"""`partition.draws: official`: the official split script's draws, sample for sample.

The test vector (`shared/reference/official-split/`, beside the repository) holds the official
script's split of Fashion-MNIST at alpha 1, ratio 0.5, 20 users; the replay test checks the
draw order of reference §2.1 step by step on a tiny label set.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from fedgen.cli import main
from fedgen.data import DatasetError, DatasetTensors, PartitionError, build_partition, load_dataset
from fedgen.data.partition import dirichlet_partition, official_partition
from fedgen.fidelity import resolve
from fedgen.spec import DataSpec, PartitionSpec, parse_spec
from tests.needs import needs

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
    """Users in order, labels ascending: the next floor(n_test / U) test samples of the label."""
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
        for c in sorted(set(TRAIN_Y[tr].tolist())):
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
