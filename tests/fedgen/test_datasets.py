"""Tests of fedgen.data.datasets on tiny files written in torchvision's exact layouts."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from fedgen.data import datasets as dsmod
from fedgen.data.common import DatasetError
from fedgen.data.datasets import load_dataset
from fedgen.data.files import DEBIAN_FASHION_MNIST
from fedgen.data.partition import build_partition
from fedgen.data_spec import DataSpec
from fedgen.spec import PartitionSpec
from tests.support.datafiles import MNIST_FILES, write_mnist_like
from tests.support.needs import needs


@pytest.mark.slow  # reads a real dataset twice
def test_mnist_plain_matches_torchvision(tmp_path: Path) -> None:
    import torchvision
    from torchvision import transforms

    write_mnist_like(
        tmp_path / "MNIST" / "raw", MNIST_FILES, (np.arange(30) % 10, np.arange(12) % 10), False
    )
    ds = load_dataset(DataSpec(name="mnist", root=str(tmp_path)))
    assert ds.train_x.shape == (30, 1, 28, 28)
    assert ds.test_x.shape == (12, 1, 28, 28)
    assert ds.train_x.dtype == torch.float32
    assert ds.train_y.dtype == torch.int64
    assert ds.num_classes == 10
    assert ds.train_groups is None
    assert float(ds.train_x.min()) == -1.0
    assert float(ds.train_x.max()) == 1.0
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
    ref = torchvision.datasets.MNIST(str(tmp_path), train=True, transform=tf)
    for i in (0, 7, 29):
        x, y = ref[i]
        assert torch.equal(x, ds.train_x[i])
        assert y == int(ds.train_y[i])
    assert load_dataset(DataSpec(name="mnist", root=str(tmp_path))) is ds  # cached


def test_fashion_gz_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_mnist_like(
        tmp_path / "FashionMNIST" / "raw", MNIST_FILES, (np.arange(20) % 10, np.arange(10)), True
    )
    monkeypatch.setenv("FEDGEN_DATA", str(tmp_path))
    ds = load_dataset(DataSpec(name="fashion-mnist"))
    assert ds.train_x.shape == (20, 1, 28, 28)
    assert ds.test_y.tolist() == list(range(10))


def test_emnist_letters_labels(tmp_path: Path) -> None:
    names = tuple(
        f"emnist-letters-{s}-{k}-ubyte"
        for s in ("train", "test")
        for k in ("images-idx3", "labels-idx1")
    )
    train_y = np.arange(52) % 26 + 1
    test_y = np.array([1, 26, 13])
    write_mnist_like(tmp_path / "EMNIST" / "raw", names, (train_y, test_y), True)
    ds = load_dataset(DataSpec(name="emnist-letters", root=str(tmp_path)))
    assert ds.num_classes == 26
    assert ds.train_y.tolist() == (train_y - 1).tolist()
    assert ds.test_y.tolist() == [0, 25, 12]
    assert ds.train_x.shape == (52, 1, 28, 28)


def test_missing_folder_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No data.root: the default root, then Debian's copy, are searched and both named."""
    monkeypatch.setattr(dsmod, "DEBIAN_FASHION_MNIST", tmp_path / "no-debian")
    monkeypatch.setenv("FEDGEN_DATA", str(tmp_path / "nothing"))
    with pytest.raises(DatasetError) as err:
        load_dataset(DataSpec(name="fashion-mnist"))
    msg = str(err.value)
    assert str(tmp_path / "nothing" / "FashionMNIST" / "raw") in msg
    assert str(tmp_path / "no-debian") in msg
    for name in MNIST_FILES:
        assert name in msg
    assert "apt-get install dataset-fashion-mnist" in msg
    assert "data.download: true" in msg
    with pytest.raises(DatasetError, match="emnist-letters-train-images-idx3-ubyte"):
        load_dataset(DataSpec(name="emnist-letters", root=str(tmp_path)))


@pytest.mark.parametrize("damage", ["magic", "truncated", "badgzip"])
def test_corrupt_idx(tmp_path: Path, damage: str) -> None:
    raw = tmp_path / "MNIST" / "raw"
    write_mnist_like(raw, MNIST_FILES, (np.arange(10), np.arange(10)), damage == "badgzip")
    if damage == "badgzip":
        target = raw / "train-images-idx3-ubyte.gz"
        target.write_bytes(target.read_bytes()[:100])
    else:
        target = raw / "train-images-idx3-ubyte"
        data = target.read_bytes()
        target.write_bytes(b"\x00\x00\x08\x01" + data[4:] if damage == "magic" else data[:-5])
    with pytest.raises(DatasetError, match=re.escape(str(target))):
        load_dataset(DataSpec(name="mnist", root=str(tmp_path)))


# --------------------------------------------------------------------------- CelebA

ATTRS = [f"Attr{i}" for i in range(31)] + ["Smiling"] + [f"More{i}" for i in range(8)]
# identity -> number of images; identity 3 has fewer than 5 and is never chosen
CELEBS = {10: 6, 20: 10, 3: 3, 40: 5}


def make_celeba(root: Path) -> dict[str, tuple[int, int]]:
    """Write a tiny CelebA; returns file -> (identity, smiling)."""
    from PIL import Image

    folder = root / "celeba"
    (folder / "img_align_celeba").mkdir(parents=True)
    files: dict[str, tuple[int, int]] = {}
    n = 0
    for celeb, count in CELEBS.items():
        for k in range(count):
            n += 1
            name = f"{n:06d}.jpg"
            files[name] = (celeb, k % 2)
            # colour encodes identity (R) and smiling (G); solid so resizing keeps it
            Image.new("RGB", (20, 24), (celeb * 5, 200 * (k % 2), 30)).save(
                folder / "img_align_celeba" / name, quality=95
            )
    lines = [str(len(files)), " ".join(ATTRS)]
    for name, (_, smile) in files.items():
        vals = ["-1"] * 40
        vals[ATTRS.index("Smiling")] = "1" if smile else "-1"
        lines.append(name + " " + " ".join(f"{v:>2}" for v in vals))
    (folder / "list_attr_celeba.txt").write_text("\n".join(lines) + "\n")
    (folder / "identity_CelebA.txt").write_text(
        "".join(f"{f} {c}\n" for f, (c, _) in files.items())
    )
    (folder / "list_eval_partition.txt").write_text("".join(f"{f} 0\n" for f in files))
    return files


def test_celeba(tmp_path: Path) -> None:
    make_celeba(tmp_path)
    spec = PartitionSpec(num_users=3, celebs_per_user=1, data_seed=1)
    ds = load_dataset(DataSpec(name="celeba", root=str(tmp_path)), spec)
    assert ds.num_classes == 2
    assert ds.train_x.shape[1:] == (3, 84, 84)
    assert ds.train_x.dtype == torch.float32
    # eligible identities 10, 20, 40: train int(0.9 n) = 5 + 9 + 4, test 1 + 1 + 1
    assert ds.train_x.shape[0] == 18
    assert ds.test_x.shape[0] == 3
    assert float(ds.train_x.max()) > 150.0  # raw 0-255, not normalised
    assert float(ds.train_x.min()) >= 0.0
    assert ds.train_groups is not None
    assert ds.test_groups is not None
    assert sorted(set(ds.train_groups.tolist())) == [0, 1, 2]
    for x, y, groups in (
        (ds.train_x, ds.train_y, ds.train_groups),
        (ds.test_x, ds.test_y, ds.test_groups),
    ):
        red = x[:, 0].mean(dim=(1, 2)).round() / 5
        green = x[:, 1].mean(dim=(1, 2))
        assert torch.equal(y, (green > 100).long())  # Smiling 1 -> 1, -1 -> 0
        for u in range(3):
            celebs = set(red[torch.from_numpy(groups == u)].round().long().tolist())
            assert len(celebs) == 1
            assert celebs <= {10, 20, 40}
    part = build_partition(ds, spec)
    assert [i.size for i in part.test_indices] == [1, 1, 1]
    again = load_dataset(DataSpec(name="celeba", root=str(tmp_path)), spec)
    assert again is ds


def test_celeba_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"list_attr_celeba\.txt"):
        load_dataset(DataSpec(name="celeba", root=str(tmp_path)))
    make_celeba(tmp_path)
    with pytest.raises(DatasetError, match="needs 4"):
        load_dataset(
            DataSpec(name="celeba", root=str(tmp_path)),
            PartitionSpec(num_users=2, celebs_per_user=2),
        )


# --------------------------------------------------------------------------- synthetic


def test_synthetic_deterministic_and_learnable() -> None:
    spec = DataSpec(name="synthetic", synthetic_samples=600, synthetic_classes=5)
    ds = load_dataset(spec, PartitionSpec(data_seed=3))
    assert ds.train_x.shape == (600, 1, 28, 28)
    assert ds.test_x.shape == (120, 1, 28, 28)
    assert ds.num_classes == 5
    assert float(ds.train_x.abs().max()) <= 1.0
    assert ds.train_y.bincount().tolist() == [120] * 5
    other = load_dataset(spec, PartitionSpec(data_seed=4))
    assert not torch.equal(ds.train_x, other.train_x)
    # nearest class mean on the training set classifies the test set well above chance
    means = torch.stack([ds.train_x[ds.train_y == c].mean(0).flatten() for c in range(5)])
    pred = torch.cdist(ds.test_x.flatten(1), means).argmin(1)
    assert (pred == ds.test_y).float().mean() > 0.9


@pytest.mark.slow
def test_real_fashion_mnist_paper_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs(DEBIAN_FASHION_MNIST.is_dir(), "Debian's dataset-fashion-mnist")
    monkeypatch.setenv("FEDGEN_DATA", str(tmp_path))  # no copy there: Debian's is read
    ds = load_dataset(DataSpec(name="fashion-mnist"))
    assert ds.train_x.shape == (60000, 1, 28, 28)
    assert ds.test_x.shape == (10000, 1, 28, 28)
    assert ds.num_classes == 10
    part = build_partition(ds, PartitionSpec(num_users=20, alpha=0.1, sampling_ratio=0.5))
    hist = part.label_histogram(ds.train_y.numpy())
    assert hist.sum() == 10 * 1500 == 15000
    assert hist.sum(axis=0).tolist() == [1500] * 10
    assert min(i.size for i in part.train_indices) >= 10
