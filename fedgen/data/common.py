"""What every dataset loader shares: the in-memory result, the error, the data root, downloads."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # arrays only in annotations: `fedgen validate` imports this without them
    import numpy as np
    import torch


class DataFiles(Protocol):
    """What the loaders' file look-ups read of a spec's `data` section
    (`fedgen.data_spec.DataSpec`, which sits above the dataset registry and so above them)."""

    @property
    def name(self) -> str: ...

    @property
    def root(self) -> str | None: ...

    @property
    def download(self) -> bool: ...


class DatasetError(RuntimeError):
    """Missing or corrupt dataset files; the message says where, what and how to get them."""


@dataclass(frozen=True)
class DataFile:
    """A file (or a folder of images) a run read: `root` is the folder it was found under (the
    data root, or Debian's dataset folder), `path` is relative to it. A folder of images is one
    entry: `size` the sum of its images' sizes, `sha256` over their sorted relative paths and
    each one's sha256 (`tree_record`)."""

    root: str
    path: str
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


CHUNK = 1 << 20


def sha256_of(file: Path) -> str:
    h = hashlib.sha256()
    with file.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _relative(root: Path, file: Path) -> str:
    try:
        return file.relative_to(root).as_posix()
    except ValueError:  # found elsewhere (a plugin's absolute folder): the path as it is
        return file.as_posix()


def file_record(root: Path, file: Path) -> DataFile:
    """`file` (under `root`) as a run's info lists it: size and sha256 of its bytes on disk."""
    try:
        return DataFile(str(root), _relative(root, file), file.stat().st_size, sha256_of(file))
    except OSError as exc:
        raise DatasetError(f"cannot read {file}: {exc}") from None


def tree_record(root: Path, folder: Path, files: Iterable[Path]) -> DataFile:
    """One entry for the images `files` read from `folder` (under `root`)."""
    h = hashlib.sha256()
    size = 0
    for f in sorted(files):
        one = file_record(folder, f)
        size += one.size
        h.update(f"{one.path}\0{one.sha256}\n".encode())
    return DataFile(str(root), _relative(root, folder) + "/", size, h.hexdigest())


@dataclass(frozen=True)
class DatasetTensors:
    """A whole dataset in memory (CPU tensors, already normalised).

    Attributes
    ----------
    name
        Dataset name as in `DataSpec.name`.
    train_x, test_x
        float32 images, shape (N, C, H, W).
    train_y, test_y
        int64 labels, shape (N,).
    num_classes
        Number of classes.
    train_groups, test_groups
        CelebA only: the user id of every sample; None for the other datasets.
    files
        What was read (recorded in the run's info); empty for generated data.
    """

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int
    train_groups: np.ndarray[Any, np.dtype[np.int64]] | None = None
    test_groups: np.ndarray[Any, np.dtype[np.int64]] | None = None
    files: tuple[DataFile, ...] = ()


def default_root() -> Path:
    """The data root of a spec that names none: $FEDGEN_DATA, else ~/.fedgen/data."""
    env = os.environ.get("FEDGEN_DATA")
    return Path(env).expanduser() if env else Path("~/.fedgen/data").expanduser()


def base_root(data: DataFiles) -> Path:
    return Path(data.root).expanduser() if data.root else default_root()


def torchvision_download(name: str, root: Path) -> None:
    import torchvision.datasets as tvd

    try:
        for train in (True, False):
            if name == "mnist":
                tvd.MNIST(str(root), train=train, download=True)
            elif name == "fashion-mnist":
                tvd.FashionMNIST(str(root), train=train, download=True)
            elif name == "emnist-letters":
                tvd.EMNIST(str(root), split="letters", train=train, download=True)
            else:
                tvd.CelebA(str(root), split="all", target_type="attr", download=True)
                return
    except Exception as exc:  # network, checksum or gdown errors
        raise DatasetError(f"{name}: download into {root} failed: {exc}") from None
