"""vocab.data_roots (a spec's data paths stay inside the lab's data roots) and what a load
records it read (root, relative path, size, sha256), on tiny IDX files in torchvision's layout."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from fedgen.data import datasets as dsmod
from fedgen.data.common import DatasetError
from fedgen.data.datasets import load_dataset
from fedgen.data.folder_spec import FolderSpec
from fedgen.data_spec import DataSpec
from tests.support.datafiles import MNIST_FILES, write_mnist_like
from vocab.data_roots import DEBIAN_DATASETS, allowed_roots, data_path_problems, resolve_inside


def _folder(path: str, root: str | None = None) -> DataSpec:
    return DataSpec(name="folder", root=root, folder=FolderSpec(path=path, classes=2))


def test_allowed_roots_default_and_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty: FEDGEN_DATA and Debian's folder; else the listed folders, resolved."""
    monkeypatch.setenv("FEDGEN_DATA", str(tmp_path / "data"))
    assert allowed_roots("") == ((tmp_path / "data").resolve(), DEBIAN_DATASETS.resolve())
    listed = allowed_roots(f" {tmp_path}/a/../b , ~ ,")
    assert listed == ((tmp_path / "b").resolve(), Path.home().resolve())
    monkeypatch.setenv("FEDGEN_DATA_ROOTS", str(tmp_path / "c"))
    assert allowed_roots() == ((tmp_path / "c").resolve(),)


def test_resolve_inside_refuses_every_way_out(tmp_path: Path) -> None:
    """`..`, an absolute path elsewhere, a symlink inside pointing outside: refused, and the
    message does not say where the path leads."""
    root = tmp_path / "root"
    (root / "mine").mkdir(parents=True)
    (root / "out").symlink_to("/etc")
    roots = (root.resolve(),)
    assert resolve_inside(root / "mine", roots) == (root / "mine").resolve()
    assert resolve_inside(root / "not-yet" / "x", roots) == (root / "not-yet" / "x").resolve()
    assert resolve_inside(root, roots) == root.resolve()
    for bad in ("/etc", f"{root}/../..", f"{root}/out", f"{root}/out/passwd", f"{root}x"):
        msg = resolve_inside(bad, roots)
        assert isinstance(msg, str), bad
        assert "outside the lab's data roots" in msg
        assert str(root.resolve()) in msg
        assert "/etc/passwd" not in msg.replace(repr(bad), "")


def test_data_path_problems_name_the_field(tmp_path: Path) -> None:
    roots = (tmp_path.resolve(),)
    assert data_path_problems(DataSpec(name="mnist", root=str(tmp_path / "m")), roots) == []
    assert data_path_problems(DataSpec(name="mnist"), roots) == []  # no path given: nothing
    assert [f for f, _ in data_path_problems(DataSpec(name="mnist", root="/etc"), roots)] == [
        "data.root"
    ]
    assert data_path_problems(_folder("shapes", root=str(tmp_path)), roots) == []
    assert [f for f, _ in data_path_problems(_folder("/etc", str(tmp_path)), roots)] == [
        "data.folder.path"
    ]
    up = data_path_problems(_folder("../../etc", str(tmp_path)), roots)
    assert [f for f, _ in up] == ["data.folder.path"]
    # A relative folder under a refused root is said once, on data.root.
    assert [f for f, _ in data_path_problems(_folder("x", "/etc"), roots)] == ["data.root"]


def _write_fmnist(raw: Path) -> None:
    write_mnist_like(raw, MNIST_FILES, (np.arange(20) % 10, np.arange(10) % 10), gz=True)


def test_a_named_root_is_read_or_the_load_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fashion-mnist with data.root lacking the files: an error naming data.root, although a
    (stand-in) Debian copy is there; without data.root, that copy is read and recorded."""
    debian = tmp_path / "debian" / "fashion-mnist"
    _write_fmnist(debian)
    monkeypatch.setattr(dsmod, "DEBIAN_FASHION_MNIST", debian)
    monkeypatch.setenv("FEDGEN_DATA", str(tmp_path / "default"))
    with pytest.raises(
        DatasetError, match=r"^fashion-mnist: dataset files not found under data\.root"
    ) as err:
        load_dataset(DataSpec(name="fashion-mnist", root=str(tmp_path / "mine")))
    assert str(debian) not in str(err.value)
    ds = load_dataset(DataSpec(name="fashion-mnist"))
    assert {f.root for f in ds.files} == {str(debian.resolve())}
    assert sorted(f.path for f in ds.files) == sorted(f"{n}.gz" for n in MNIST_FILES)


def test_a_load_records_what_it_read(tmp_path: Path) -> None:
    """Each IDX file: the data root, its path under it, its size and the sha256 of its bytes."""
    raw = tmp_path / "FashionMNIST" / "raw"
    _write_fmnist(raw)
    ds = load_dataset(DataSpec(name="fashion-mnist", root=str(tmp_path)))
    assert len(ds.files) == 4
    for f in ds.files:
        assert f.root == str(tmp_path.resolve())
        on_disk = tmp_path / f.path
        assert f.path.startswith("FashionMNIST/raw/")
        assert on_disk.is_file()
        assert f.size == on_disk.stat().st_size
        assert f.sha256 == hashlib.sha256(on_disk.read_bytes()).hexdigest()
