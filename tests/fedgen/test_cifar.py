"""CIFAR-10/100 on tiny files written in torchvision's exact pickle layout, and crop-flip."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from fedgen.data.cifar import CIFAR, augment_batch
from fedgen.data.common import DatasetError
from fedgen.data.datasets import load_dataset
from fedgen.data.registry import get_dataset
from fedgen.data_spec import DataSpec
from fedgen.events import MemorySink
from fedgen.runner import Simulation, run
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from vocab.host_datasets import loadable

PER_FILE = 8


def _batch(rng: np.random.Generator, n: int, label_key: bytes, classes: int) -> dict[bytes, Any]:
    """One file's dict as the archives hold it (Python 2 pickles: bytes keys)."""
    entry: dict[bytes, Any] = {
        b"batch_label": b"tiny batch",
        b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        label_key: [int(v) for v in np.arange(n) % classes],  # a list, as in the archives
        b"filenames": [f"img_{i}.png".encode() for i in range(n)],
    }
    if label_key == b"fine_labels":
        entry[b"coarse_labels"] = [0] * n
    return entry


def write_cifar(root: Path, name: str, per_file: int = PER_FILE, seed: int = 0) -> Path:
    """The layout torchvision's CIFAR10/CIFAR100(download=True) leaves, tiny."""
    info = CIFAR[name]
    folder = root / info.folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for f in (*info.train, info.test):
        with (folder / f).open("wb") as fh:
            pickle.dump(_batch(rng, per_file, info.label_key, info.num_classes), fh, protocol=2)
    meta = "batches.meta" if name == "cifar10" else "meta"
    (folder / meta).write_bytes(pickle.dumps({b"label_names": []}, protocol=2))
    return folder


def test_cifar10_loads_normalised_with_provenance(tmp_path: Path) -> None:
    folder = write_cifar(tmp_path, "cifar10")
    ds = load_dataset(DataSpec(name="cifar10", root=str(tmp_path)))
    assert ds.train_x.shape == (5 * PER_FILE, 3, 32, 32)
    assert ds.test_x.shape == (
        PER_FILE,
        3,
        32,
        32,
    )
    assert ds.num_classes == 10
    assert ds.train_y.dtype == torch.int64
    # The first training image is data_batch_1's first row: R plane, G plane, B plane.
    with (folder / "data_batch_1").open("rb") as fh:
        raw = pickle.load(fh, encoding="bytes")[b"data"][0].reshape(3, 32, 32)
    info = CIFAR["cifar10"]
    for c in range(3):
        want = (raw[c].astype(np.float32) / 255 - info.mean[c]) / info.std[c]
        assert np.allclose(ds.train_x[0, c].numpy(), want, atol=1e-5)
    assert ds.train_y[:PER_FILE].tolist() == list(range(PER_FILE))
    # Files and sha256 recorded as for Fashion-MNIST: the five batches, then the test batch.
    assert [f.path for f in ds.files] == [
        *(f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)),
        "cifar-10-batches-py/test_batch",
    ]
    assert all(len(f.sha256) == 64 and f.size > 0 for f in ds.files)
    assert "cifar10" in loadable(tmp_path)
    assert "cifar100" not in loadable(tmp_path)


def test_cifar100_reads_the_fine_labels(tmp_path: Path) -> None:
    write_cifar(tmp_path, "cifar100", per_file=120)
    ds = load_dataset(DataSpec(name="cifar100", root=str(tmp_path)))
    assert ds.num_classes == 100
    assert ds.train_x.shape == (120, 3, 32, 32)
    assert int(ds.train_y.max()) == 99
    assert [f.path for f in ds.files] == [
        "cifar-100-python/train",
        "cifar-100-python/test",
    ]


def test_missing_or_malformed_files_name_data_root(tmp_path: Path) -> None:
    data = DataSpec(name="cifar10", root=str(tmp_path))
    with pytest.raises(DatasetError, match=r"data_batch_1.*data\.root"):
        load_dataset(data)
    assert [f for f, _ in get_dataset("cifar10").problems(data)] == ["data.root"]
    folder = write_cifar(tmp_path, "cifar10", seed=1)
    assert get_dataset("cifar10").problems(data) == []
    (folder / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(DatasetError, match=r"malformed CIFAR file .*data_batch_3.*data\.root"):
        load_dataset(data)
    with (folder / "data_batch_3").open("wb") as fh:  # a pickle, but not the layout
        pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, fh, protocol=2)
    with pytest.raises(DatasetError, match=r"expected uint8 \(N, 3072\)"):
        load_dataset(data)


def test_augment_defaults_and_limits() -> None:
    assert ExperimentSpec.model_validate({"data": {"name": "cifar10"}}).data.resolved_augment == (
        "crop-flip"
    )
    assert ExperimentSpec().data.resolved_augment == "none"
    # Unset, it is left out of the canonical JSON (stored specs keep their hashes).
    assert "augment" not in ExperimentSpec().canonical_json()
    with pytest.raises(SpecError, match="data.augment"):
        parse_spec({"data": {"name": "synthetic-fedprox", "augment": "crop-flip"}})


def test_crop_flip_moves_and_mirrors_within_the_padded_image() -> None:
    x = torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).view(2, 3, 32, 32)
    out = augment_batch(x, torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    gen = torch.Generator().manual_seed(3)
    # Without padding every image is itself or its mirror.
    for _ in range(5):
        same = augment_batch(x, gen, pad=0)
        for i in range(2):
            assert torch.equal(same[i], x[i]) or torch.equal(same[i], x[i].flip(-1))
    # With padding, each output row is a (maybe mirrored) run of one input row's pixels or 0.
    vals = set(x.flatten().tolist()) | {0.0}
    assert set(out.flatten().tolist()) <= vals


def test_a_cifar_run_augments_and_resumes_exactly(tmp_path: Path) -> None:
    write_cifar(tmp_path, "cifar10", per_file=20)
    base: dict[str, Any] = {
        "data": {"name": "cifar10", "root": str(tmp_path)},
        "partition": {"num_users": 3, "alpha": 1.0, "min_samples": 5, "sampling_ratio": 1.0},
        "users_per_round": 2,
        "rounds": 2,
        "local_steps": 2,
        "batch_size": 8,
        "checkpoint_every": 0,
        "eval_batch_size": 64,
    }
    flat = MemorySink()
    run(parse_spec({**base, "data": {**base["data"], "augment": "none"}}), flat)
    whole = MemorySink()
    run(parse_spec(base), whole)
    acc = [e.metrics["train_loss"] for e in whole.events[1:]]
    assert acc != [e.metrics["train_loss"] for e in flat.events[1:]]  # the crops changed it
    # Round 1, its full state, then round 2 in a fresh simulation: the same as uninterrupted.
    first = Simulation(parse_spec(base))
    first.round(1)
    state = first.full_state(1)
    assert "augment" in state
    path = tmp_path / "ck.pt"
    torch.save(state, path)
    second = Simulation(parse_spec(base))
    second.restore(path)
    assert second.round(2).metrics["train_loss"] == acc[1]
