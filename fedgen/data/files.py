"""Where the built-in datasets' files are on a host, found without reading them (no torch, no
numpy): the IDX datasets' folders and file names, CelebA's annotations.

The built-ins' declarations (`fedgen.data.registry`) probe with these; `fedgen.data.datasets`
loads from the same places; `vocab.host_datasets` asks every registered dataset which a host
has. Layouts: see fedgen.data.datasets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")


@dataclass(frozen=True)
class IdxInfo:
    folder: str  # torchvision class name = sub-folder of <root>
    files: tuple[str, str, str, str]  # train images, train labels, test images, test labels
    num_classes: int
    label_offset: int  # subtracted from the stored labels
    apt: str | None = None


IDX: dict[str, IdxInfo] = {
    "mnist": IdxInfo(
        "MNIST",
        (
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        ),
        10,
        0,
    ),
    "fashion-mnist": IdxInfo(
        "FashionMNIST",
        (
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        ),
        10,
        0,
        apt="dataset-fashion-mnist",
    ),
    "emnist-letters": IdxInfo(
        "EMNIST",
        (
            "emnist-letters-train-images-idx3-ubyte",
            "emnist-letters-train-labels-idx1-ubyte",
            "emnist-letters-test-images-idx3-ubyte",
            "emnist-letters-test-labels-idx1-ubyte",
        ),
        26,
        1,
    ),
}


def find_files(folder: Path, names: Sequence[str]) -> list[Path] | None:
    """Each name, plain or ``.gz``, inside `folder`; None if any is missing."""
    found = []
    for name in names:
        for candidate in (folder / name, folder / f"{name}.gz"):
            if candidate.is_file():
                found.append(candidate)
                break
        else:
            return None
    return found


def idx_folders(name: str, root: Path, debian: Path | None = DEBIAN_FASHION_MNIST) -> list[Path]:
    """The folders searched, in order, for an IDX dataset's files. Debian's copy of
    Fashion-MNIST is searched only for a spec that names no data.root (pass debian=None then):
    a run reads what its spec names or fails, never a substitute."""
    searched = [root / IDX[name].folder / "raw"]
    if name == "fashion-mnist" and debian is not None:
        searched.append(debian)
    return searched


def celeba_present(root: Path) -> bool:
    """CelebA's annotation files and image folder are under `root`/celeba."""
    folder = root / "celeba"
    required = (folder / "identity_CelebA.txt", folder / "list_attr_celeba.txt")
    return all(f.is_file() for f in required) and (folder / "img_align_celeba").is_dir()
