"""One declaration per dataset: what it is, how to load it, how to tell a host has it.

Every dataset a spec may name (`data.name`) is a `DatasetDecl` registered here: the
built-ins (`mnist`, `emnist-letters`, `fashion-mnist`, `celeba`, `synthetic`, `folder`) at
import (`BUILTINS`), plugins through `register_dataset` (fedgen.plugins calls it for each entry
point of group `fedgen.datasets`; the look-ups below load the plugins on first use). The spec's dataset field, its JSON schema, the checkpoint-size
estimate, the partition checks, the worker's offer and the dashboard's form all read this
registry, so a registered dataset is known everywhere at once.

This module imports neither torch nor numpy (nor fedgen.spec at import time): `fedgen
validate` reads the registry without loading torch. A loader is therefore named as
``"module:function"`` (imported on first load) or given as a callable that imports what it
needs itself.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedgen.data.common import DatasetTensors
    from fedgen.data_spec import DataSpec
    from fedgen.spec import PartitionSpec

Shape = tuple[int, int, int]  # (channels, height, width)
Loader = Callable[["DataSpec", "PartitionSpec"], "DatasetTensors"]
Probe = Callable[[Path], "bool | str"]
Check = Callable[["DataSpec"], "list[tuple[str, str]]"]

#: A dataset name: lower case, digits, '.', '_', '-'; at most 64 characters.
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
#: Names a dataset may not take (FedDF's `proxy: heldout` means "no dataset").
RESERVED = frozenset({"heldout"})
MAX_CLASSES = 1000


def _always(root: Path) -> bool | str:  # noqa: ARG001 (a Probe's signature)
    return True


@dataclass(frozen=True)
class DatasetDecl:
    """A dataset, declared once.

    Attributes
    ----------
    name
        What `data.name` says (`NAME_PATTERN`).
    label
        For people (tables, forms): "Fashion-MNIST".
    shape
        (C, H, W) of its images as the loader returns them; `shape_for` overrides it per spec.
    classes
        Number of classes; `classes_for` overrides it per spec.
    loader
        ``"module:function"`` or a callable ``(DataSpec, PartitionSpec) -> DatasetTensors``;
        resolved only when a run loads the data (keeps torch out of `fedgen validate`).
    available
        ``available(data_root) -> True | False | reason``: are its files on this host? A lab
        worker offers the datasets for which this is True (fedgen.data.locate.loadable).
        Must be cheap and must not read the files.
    downloadable
        `data.download: true` can fetch it.
    train_class_counts
        Training samples per class when fixed and known: the API checks that a Dirichlet split
        can be drawn, and sizes the checkpoint, without loading the data. None: checked when
        loaded.
    files_in_spec
        Its files are named by each spec (the `folder` dataset), not by the host's data root:
        a failed load says nothing about the next run, so a worker never stops offering it.
    shape_for, classes_for
        The shape and class count of a spec whose dataset takes them from the spec.
    check
        ``check(data) -> [(field, message)]``: problems with the files this spec points to, on
        this host, found without torch (`fedgen validate`); empty when fine or not checkable.
    description
        One line for listings.
    """

    name: str
    label: str
    shape: Shape
    classes: int
    loader: str | Loader
    available: Probe = _always
    downloadable: bool = False
    train_class_counts: tuple[int, ...] | None = None
    files_in_spec: bool = False
    shape_for: Callable[[DataSpec], Shape] | None = None
    classes_for: Callable[[DataSpec], int] | None = None
    check: Check | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name) or self.name in RESERVED:
            raise ValueError(
                f"dataset name {self.name!r}: expected {NAME_PATTERN.pattern}, not 'heldout'"
            )
        c, h, w = self.shape
        if not (1 <= c <= 16 and 1 <= h <= 4096 and 1 <= w <= 4096):
            raise ValueError(f"dataset {self.name}: shape {self.shape} is not a (C, H, W) image")
        if not 1 <= self.classes <= MAX_CLASSES:
            raise ValueError(f"dataset {self.name}: classes={self.classes} not in 1..{MAX_CLASSES}")
        if isinstance(self.loader, str) and ":" not in self.loader:
            raise ValueError(
                f"dataset {self.name}: loader {self.loader!r} is not 'module:function'"
            )

    def input_shape(self, data: DataSpec) -> Shape:
        """(C, H, W) of this spec's images."""
        return self.shape_for(data) if self.shape_for is not None else self.shape

    def num_classes(self, data: DataSpec) -> int:
        """Classes of this spec's dataset."""
        return self.classes_for(data) if self.classes_for is not None else self.classes

    def load(self, data: DataSpec, partition: PartitionSpec) -> DatasetTensors:
        """Load the data (imports the loader now)."""
        fn: Any = self.loader
        if isinstance(fn, str):
            module, _, attr = fn.partition(":")
            fn = getattr(importlib.import_module(module), attr)
        out: DatasetTensors = fn(data, partition)
        return out

    def missing(self, root: Path) -> str | None:
        """None when `available(root)`; else why not (a short reason)."""
        try:
            got = self.available(root)
        except Exception as exc:  # a plugin's probe must not break the worker's offer
            return f"probe failed: {type(exc).__name__}: {exc}"
        if got is True:
            return None
        return got if isinstance(got, str) and got else f"{self.name}: files not found"

    def problems(self, data: DataSpec) -> list[tuple[str, str]]:
        """`check(data)`, or nothing when the dataset has no check."""
        return self.check(data) if self.check is not None else []


_lock = threading.Lock()
_registry: dict[str, DatasetDecl] = {}
_plugins_asked = False


def _with_plugins() -> None:
    """Load the installed plugins (fedgen.plugins) on first use, so that every process sees the
    same datasets; once per process (fedgen.plugins guards against a plugin that reads the
    registry while it loads)."""
    global _plugins_asked
    if _plugins_asked:
        return
    _plugins_asked = True
    from fedgen.plugins import load

    load()


def register_dataset(decl: DatasetDecl) -> DatasetDecl:
    """Make `decl` known by its name; registering the same declaration again is a no-op.

    Raises
    ------
    ValueError
        Another declaration already has this name (a plugin cannot replace a built-in).
    """
    if not isinstance(decl, DatasetDecl):
        raise TypeError(f"register_dataset expects a DatasetDecl, got {type(decl).__name__}")
    with _lock:
        old = _registry.get(decl.name)
        if old is not None and old != decl:
            raise ValueError(f"dataset {decl.name!r} is already registered ({old.label})")
        _registry[decl.name] = decl
    return decl


def unregister_dataset(name: str) -> None:
    """Forget a dataset (tests; a built-in stays forgotten until the process restarts)."""
    with _lock:
        _registry.pop(name, None)


def get_dataset(name: str) -> DatasetDecl:
    """The declaration of `name`; KeyError naming the registered ones if unknown."""
    _with_plugins()
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(
            f"unknown dataset {name!r}; registered: {', '.join(dataset_names())}"
        ) from None


def dataset_names() -> tuple[str, ...]:
    """Every registered dataset, built-ins first, then the installed plugins'."""
    _with_plugins()
    return tuple(_registry)


def datasets() -> tuple[DatasetDecl, ...]:
    """Every registered declaration, in `dataset_names` order."""
    _with_plugins()
    return tuple(_registry.values())


# --------------------------------------------------------------------------- built-ins

_MNIST_SHAPE: Shape = (1, 28, 28)


def _idx_probe(name: str) -> Probe:
    def probe(root: Path) -> bool | str:
        from fedgen.data.locate import IDX, find_files, idx_folders

        folders = idx_folders(name, root)
        if any(find_files(f, IDX[name].files) is not None for f in folders):
            return True
        return f"{name}: no IDX files in {', '.join(str(f) for f in folders)}"

    return probe


def _celeba_probe(root: Path) -> bool | str:
    from fedgen.data.locate import celeba_present

    return celeba_present(root) or f"celeba: no annotations or images under {root / 'celeba'}"


def _synthetic_classes(data: DataSpec) -> int:
    return data.synthetic_classes


def _folder_shape(data: DataSpec) -> Shape:
    from fedgen.data.folder import folder_shape

    return folder_shape(data)


def _folder_classes(data: DataSpec) -> int:
    from fedgen.data.folder import folder_classes

    return folder_classes(data)


def _folder_check(data: DataSpec) -> list[tuple[str, str]]:
    from fedgen.data.folder import check_folder

    return check_folder(data)


# Training samples per class of the fixed datasets (the official split's inputs).
_MNIST_COUNTS = (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949)


def _idx_decl(name: str, label: str, counts: tuple[int, ...], description: str) -> DatasetDecl:
    """One of the downloadable IDX datasets (28x28 greyscale, `load_idx_dataset`)."""
    return DatasetDecl(
        name,
        label,
        _MNIST_SHAPE,
        len(counts),
        "fedgen.data.datasets:load_idx_dataset",
        available=_idx_probe(name),
        downloadable=True,
        train_class_counts=counts,
        description=description,
    )


BUILTINS: tuple[DatasetDecl, ...] = (
    _idx_decl("mnist", "MNIST", _MNIST_COUNTS, "handwritten digits, 60k/10k, <root>/MNIST/raw"),
    _idx_decl(
        "emnist-letters",
        "EMNIST",
        (4800,) * 26,
        "handwritten letters, 124.8k/20.8k, <root>/EMNIST/raw",
    ),
    _idx_decl(
        "fashion-mnist",
        "Fashion-MNIST",
        (6000,) * 10,
        "clothing, 60k/10k, <root>/FashionMNIST/raw or Debian's package",
    ),
    DatasetDecl(
        "celeba",
        "CelebA",
        (3, 84, 84),
        2,
        "fedgen.data.celeba:load_celeba",
        available=_celeba_probe,
        downloadable=True,
        description="smiling or not, users = groups of celebrities, <root>/celeba",
    ),
    DatasetDecl(
        "synthetic",
        "Synthetic",
        _MNIST_SHAPE,
        10,
        "fedgen.data.datasets:load_synthetic_dataset",
        classes_for=_synthetic_classes,
        description="generated in memory (data.synthetic_samples, data.synthetic_classes)",
    ),
    DatasetDecl(
        "folder",
        "Folder",
        _MNIST_SHAPE,
        2,
        "fedgen.data.folder:load_folder_dataset",
        files_in_spec=True,
        shape_for=_folder_shape,
        classes_for=_folder_classes,
        check=_folder_check,
        description="a lab's own images (data.folder: ImageFolder layout or train/test.npz)",
    ),
)

for _decl in BUILTINS:
    register_dataset(_decl)
