"""Loading the benchmark datasets as in-memory tensors (reference §2).

Files are read from torchvision's own on-disk layouts, so whatever
``torchvision.datasets.X(root, download=True)`` wrote is found:

* ``mnist``          ``<root>/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``
* ``fashion-mnist``  ``<root>/FashionMNIST/raw/`` (same names); also Debian's
  ``/usr/share/datasets/fashion-mnist/`` (package ``dataset-fashion-mnist``), but only for a
  spec that names no ``data.root`` (one that does reads from there or fails)
* ``emnist-letters`` ``<root>/EMNIST/raw/emnist-letters-{train,test}-{images-idx3,labels-idx1}-ubyte[.gz]``
* ``celeba``         ``<root>/celeba/{img_align_celeba/*.jpg, list_attr_celeba.txt, identity_CelebA.txt}``
* ``synthetic``      generated in memory (`fedgen.data.synthetic`)
* ``folder``         the spec's ``data.folder`` (`fedgen.data.folder`)

Which loader a name takes is its declaration's (`fedgen.data.registry`), so a plugin's
dataset loads through `load_dataset` like the built-ins.

``<root>`` is ``data.root`` if given, else ``$FEDGEN_DATA``, else ``~/.fedgen/data``.
IDX files are parsed directly with numpy. MNIST-like images are normalised as
ToTensor + Normalize(0.5, 0.5), i.e. to [-1, 1]; CelebA images stay raw 0-255 floats, as in
the official code. The network is used only when ``data.download`` is true.

Loaded datasets are cached in-process; treat the returned tensors as read-only. Each load
records the files it read (`DatasetTensors.files`: root, relative path, size, sha256), which
the run's info lists.
"""

from __future__ import annotations

import functools
import gzip
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fedgen.data.common import (
    DatasetError,
    DatasetTensors,
    base_root,
    file_record,
    torchvision_download,
)
from fedgen.data.files import DEBIAN_FASHION_MNIST, IdxInfo, idx_folders
from fedgen.data.files import IDX as _IDX
from fedgen.data.files import find_files as _find_files
from fedgen.data.registry import get_dataset
from fedgen.data.synthetic import make_synthetic
from fedgen.data_spec import DataSpec
from fedgen.spec import PartitionSpec

__all__ = ["load_dataset", "read_idx"]


# --------------------------------------------------------------------------- IDX files


def read_idx(path: Path, ndim: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """Read an unsigned-byte IDX file (optionally gzipped) into a uint8 array.

    Raises
    ------
    DatasetError
        If the file cannot be read, has a wrong magic number or the wrong size.
    """
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        else:
            raw = path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetError(f"cannot read {path}: {exc}; delete it and fetch it again") from None
    expected_magic = 0x0800 | ndim
    magic = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else -1
    if magic != expected_magic:
        raise DatasetError(
            f"corrupt IDX file {path}: magic number {magic:#010x}, expected {expected_magic:#010x}; "
            "delete it and fetch it again"
        )
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DatasetError(
            f"corrupt IDX file {path}: truncated header; delete it and fetch it again"
        )
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    if len(raw) != header + int(np.prod(dims)):
        raise DatasetError(
            f"corrupt IDX file {path}: {len(raw) - header} data bytes for shape {dims} "
            f"(expected {int(np.prod(dims))}; truncated?); delete it and fetch it again"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _idx_missing_error(
    name: str, info: IdxInfo, searched: Sequence[Path], root: Path, given: str | None = None
) -> DatasetError:
    folders = ", ".join(str(s) for s in searched)
    files = ", ".join(f"{f}[.gz]" for f in info.files)
    if given:  # the spec named its folder: say so first, and that nothing else was tried
        return DatasetError(
            f"{name}: dataset files not found under data.root {given!r} "
            f"(searched {folders}; expected {files}). A run reads the data.root it names "
            "and nothing else: copy the files there, set data.download: true, or leave "
            "data.root out to use the worker's own data."
        )
    how = [
        f"set data.download: true on a machine with internet (writes {root / info.folder / 'raw'})"
    ]
    if info.apt:
        how.append(f"'apt-get install {info.apt}' (installs {DEBIAN_FASHION_MNIST})")
    how.append(
        f"or copy the files into <root>/{info.folder}/raw/ (root = data.root, $FEDGEN_DATA or ~/.fedgen/data)"
    )
    return DatasetError(
        f"{name}: dataset files not found. Searched: {folders}. Expected files: {files}. "
        f"To get them: {'; '.join(how)}."
    )


def _normalise(images: np.ndarray[Any, np.dtype[np.uint8]]) -> torch.Tensor:
    """ToTensor then Normalize(0.5, 0.5): uint8 (N,H,W) -> float32 (N,1,H,W) in [-1, 1]."""
    x = torch.from_numpy(images.astype(np.float32)).div_(255.0)
    return x.sub_(0.5).div_(0.5).unsqueeze(1)


@functools.lru_cache(maxsize=4)
def _load_idx_cached(name: str, paths: tuple[Path, Path, Path, Path], root: Path) -> DatasetTensors:
    """Parse the four files (found under `root`); each is hashed once per load."""
    info = _IDX[name]
    files = tuple(file_record(root, p) for p in paths)
    arrays = [read_idx(p, 3 if i % 2 == 0 else 1) for i, p in enumerate(paths)]
    tensors: list[torch.Tensor] = []
    for split, (images, labels) in enumerate(((arrays[0], arrays[1]), (arrays[2], arrays[3]))):
        img_path, lab_path = paths[2 * split], paths[2 * split + 1]
        if images.shape[1:] != (28, 28) or images.shape[0] != labels.shape[0]:
            raise DatasetError(
                f"{name}: {img_path} has shape {images.shape} but {lab_path} has "
                f"{labels.shape[0]} labels (expected N x 28 x 28 and N labels)"
            )
        y = labels.astype(np.int64) - info.label_offset
        if y.size and (y.min() < 0 or y.max() >= info.num_classes):
            raise DatasetError(
                f"{name}: labels in {lab_path} outside [{info.label_offset}, "
                f"{info.label_offset + info.num_classes})"
            )
        tensors += [_normalise(images), torch.from_numpy(y)]
    return DatasetTensors(
        name, tensors[0], tensors[1], tensors[2], tensors[3], info.num_classes, files=files
    )


def _load_from(name: str, folder: Path, root: Path, paths: list[Path]) -> DatasetTensors:
    # The recorded root: the data root, or Debian's folder when the files came from there.
    base = root if folder.is_relative_to(root) else folder
    home = base.resolve()
    found = [home / p.relative_to(base) for p in paths]
    return _load_idx_cached(name, (found[0], found[1], found[2], found[3]), home)


def _load_idx(data: DataSpec) -> DatasetTensors:
    info = _IDX[data.name]
    root = base_root(data)
    searched = idx_folders(data.name, root, None if data.root else DEBIAN_FASHION_MNIST)
    for folder in searched:
        paths = _find_files(folder, info.files)
        if paths is not None:
            return _load_from(data.name, folder, root, paths)
    if data.download:
        torchvision_download(data.name, root)
        paths = _find_files(searched[0], info.files)
        if paths is not None:
            return _load_from(data.name, searched[0], root, paths)
    raise _idx_missing_error(data.name, info, searched, root, data.root)


# --------------------------------------------------------------------------- entry point


@functools.lru_cache(maxsize=4)
def _load_synthetic(num_classes: int, num_train: int, seed: int) -> DatasetTensors:
    tx, ty, vx, vy = make_synthetic(num_classes, num_train, seed)
    return DatasetTensors(
        "synthetic",
        torch.from_numpy(tx),
        torch.from_numpy(ty),
        torch.from_numpy(vx),
        torch.from_numpy(vy),
        num_classes,
    )


def load_idx_dataset(data: DataSpec, partition: PartitionSpec) -> DatasetTensors:  # noqa: ARG001
    """The registry's loader of mnist, fashion-mnist and emnist-letters."""
    return _load_idx(data)


def load_synthetic_dataset(data: DataSpec, partition: PartitionSpec) -> DatasetTensors:
    """The registry's loader of synthetic (seeded by the split's `data_seed`)."""
    return _load_synthetic(data.synthetic_classes, data.synthetic_samples, partition.data_seed)


def load_dataset(data: DataSpec, partition: PartitionSpec | None = None) -> DatasetTensors:
    """Load a dataset into memory.

    Parameters
    ----------
    data
        Which dataset, where to look and whether downloading is allowed.
    partition
        Needed by CelebA (which celebrities form which user: ``num_users``,
        ``celebs_per_user``, ``data_seed``; default `PartitionSpec()`) and to seed
        ``synthetic`` (``data_seed``, or 0 without a partition). Ignored otherwise.

    Returns
    -------
    DatasetTensors
        CPU tensors; cached in-process, so do not modify them in place.

    Raises
    ------
    DatasetError
        If the files are missing or corrupt; the message names the folders searched, the
        files expected and how to get them.
    """
    if data.name == "synthetic" and partition is None:  # seed 0 without a partition
        return _load_synthetic(data.synthetic_classes, data.synthetic_samples, 0)
    p = partition if partition is not None else PartitionSpec()
    return get_dataset(data.name).load(data, p)
