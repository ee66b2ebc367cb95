"""What a dataset declaration is: `DatasetDecl` and the types of its functions.

The declarations live in `fedgen.data.registry` (the built-ins) and plugins; the registry
collects them and `fedgen.data_spec` validates `data.name` against it. This module imports
neither torch nor numpy nor the spec (which sits above: see `DataSection`), so the
registry and every module that builds a declaration (`fedgen.data.folder`) sit on it.
A loader is named as ``"module:function"`` (imported on first load) or given as a callable.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedgen.data.common import DatasetTensors

# A spec's `data` and `partition` sections (`fedgen.data_spec.DataSpec`, `fedgen.spec.
# PartitionSpec`) sit above the registry, which they validate dataset names against: a
# declaration's functions take them, typed here as what they are to it, values it passes on.
DataSection = Any
PartitionSection = Any
Shape = tuple[int, int, int]  # (channels, height, width)
Loader = Callable[[DataSection, PartitionSection], DatasetTensors]
Probe = Callable[[Path], "bool | str"]
Check = Callable[[DataSection], "list[tuple[str, str]]"]

#: A dataset name: lower case, digits, '.', '_', '-'; at most 64 characters.
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
#: Names a dataset may not take (FedDF's `proxy: heldout` means "no dataset").
RESERVED = frozenset({"heldout"})
MAX_CLASSES = 1000
#: The train-time augmentations (`data.augment`).
AUGMENTS = ("none", "crop-flip")


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
        worker offers the datasets for which this is True (vocab.host_datasets.loadable).
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
    augment
        Its train-time augmentation when the spec leaves `data.augment` unset: ``"none"``, or
        ``"crop-flip"`` (CIFAR's standard: `fedgen.data.cifar.augment_batch`).
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
    shape_for: Callable[[DataSection], Shape] | None = None
    classes_for: Callable[[DataSection], int] | None = None
    check: Check | None = None
    description: str = ""
    augment: str = "none"

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
        if self.augment not in AUGMENTS:
            raise ValueError(f"dataset {self.name}: augment {self.augment!r} not in {AUGMENTS}")
        if isinstance(self.loader, str) and ":" not in self.loader:
            raise ValueError(
                f"dataset {self.name}: loader {self.loader!r} is not 'module:function'"
            )

    def input_shape(self, data: DataSection) -> Shape:
        """(C, H, W) of this spec's images."""
        return self.shape_for(data) if self.shape_for is not None else self.shape

    def num_classes(self, data: DataSection) -> int:
        """Classes of this spec's dataset."""
        return self.classes_for(data) if self.classes_for is not None else self.classes

    def load(self, data: DataSection, partition: PartitionSection) -> DatasetTensors:
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

    def problems(self, data: DataSection) -> list[tuple[str, str]]:
        """`check(data)`, or nothing when the dataset has no check."""
        return self.check(data) if self.check is not None else []
