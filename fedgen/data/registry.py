"""One declaration per dataset: what it is, how to load it, how to tell a host has it.

Every dataset a spec may name (`data.name`) is a `DatasetDecl` (`fedgen.data.decl`)
registered here: the built-ins (`mnist`, `emnist-letters`, `fashion-mnist`, `celeba`,
`cifar10`, `cifar100`, `synthetic`, `synthetic-fedprox`, `folder`) at import (`BUILTINS`),
plugins through `register_dataset` (each entry point of group `fedgen.datasets`, loaded by the
look-ups below on first use). The spec's dataset field, its JSON schema, the checkpoint-size
estimate, the partition checks, the worker's offer and the dashboard's form all read this
registry, so a registered dataset is known everywhere at once.

This module imports neither torch nor numpy, nor the spec (`fedgen.data_spec` sits above it):
`fedgen validate` reads the registry without loading torch. The built-ins' probes and checks
come from the modules that know their files (`fedgen.data.files`, `fedgen.data.folder`,
`fedgen.data.cifar`, each torch- and numpy-free at import); a loader is named as
``"module:function"`` (imported on first load) or given as a callable that imports what it
needs itself.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from fedgen.data.cifar import cifar_check, cifar_probe
from fedgen.data.decl import (
    DataSection,
    DatasetDecl,
    Probe,
    Shape,
)
from fedgen.data.files import IDX, celeba_present, find_files, idx_folders
from fedgen.data.folder import check_folder, folder_classes, folder_shape
from fedgen.plugin_loader import PluginRecord, load_group

__all__ = [
    "BUILTINS",
    "dataset_names",
    "datasets",
    "get_dataset",
    "load_plugins",
    "register_dataset",
    "unregister_dataset",
]

_lock = threading.Lock()
_registry: dict[str, DatasetDecl] = {}


def _register_entry_point(obj: Any, source: str) -> str:  # noqa: ARG001 (a Register's signature)
    """Register what a `fedgen.datasets` entry point resolved to (a DatasetDecl, or a
    zero-argument callable returning one)."""
    dataset = obj() if callable(obj) and not isinstance(obj, DatasetDecl) else obj
    if not isinstance(dataset, DatasetDecl):
        raise TypeError(f"expected a DatasetDecl, got {type(dataset).__name__}")
    register_dataset(dataset)
    return str(getattr(dataset, "name", "?"))


def load_plugins(*, force: bool = False) -> tuple[PluginRecord, ...]:
    """The installed plugins of group `fedgen.datasets`, registered once per process (again
    with `force`): every look-up below asks first, so every process sees the same datasets."""
    return load_group("fedgen.datasets", _register_entry_point, force=force)


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
    load_plugins()
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(
            f"unknown dataset {name!r}; registered: {', '.join(dataset_names())}"
        ) from None


def dataset_names() -> tuple[str, ...]:
    """Every registered dataset, built-ins first, then the installed plugins'."""
    load_plugins()
    return tuple(_registry)


def datasets() -> tuple[DatasetDecl, ...]:
    """Every registered declaration, in `dataset_names` order."""
    load_plugins()
    return tuple(_registry.values())


# --------------------------------------------------------------------------- built-ins

_MNIST_SHAPE: Shape = (1, 28, 28)


def _idx_probe(name: str) -> Probe:
    def probe(root: Path) -> bool | str:
        folders = idx_folders(name, root)
        if any(find_files(f, IDX[name].files) is not None for f in folders):
            return True
        return f"{name}: no IDX files in {', '.join(str(f) for f in folders)}"

    return probe


def _celeba_probe(root: Path) -> bool | str:
    return celeba_present(root) or f"celeba: no annotations or images under {root / 'celeba'}"


def _synthetic_classes(data: DataSection) -> int:
    classes: int = data.synthetic_classes
    return classes


def _cifar_decl(name: str, label: str, classes: int, folder: str) -> DatasetDecl:
    """CIFAR-10 or CIFAR-100 in torchvision's layout (`fedgen.data.cifar`)."""
    return DatasetDecl(
        name,
        label,
        (3, 32, 32),
        classes,
        "fedgen.data.cifar:load_cifar",
        available=cifar_probe(name),
        downloadable=True,
        train_class_counts=(50_000 // classes,) * classes,
        check=cifar_check(name),
        description=f"32x32 colour images, {classes} classes, 50k/10k, <root>/{folder}",
        augment="crop-flip",
    )


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
    _cifar_decl("cifar10", "CIFAR-10", 10, "cifar-10-batches-py"),
    _cifar_decl("cifar100", "CIFAR-100", 100, "cifar-100-python"),
    DatasetDecl(
        "synthetic-fedprox",
        "Synthetic (FedProx)",
        # 60 features, as a 1x1x60 "image": the (C, H, W) every model and estimate reads.
        (1, 1, 60),
        10,
        "fedgen.data.fedprox:load_synthetic_fedprox",
        description="Synthetic(α, β) of the FedProx paper: per-user logistic models and "
        "inputs, power-law sizes, users = partition.num_users (data.fedprox_alpha/beta)",
    ),
    DatasetDecl(
        "folder",
        "Folder",
        _MNIST_SHAPE,
        2,
        "fedgen.data.folder:load_folder_dataset",
        files_in_spec=True,
        shape_for=folder_shape,
        classes_for=folder_classes,
        check=check_folder,
        description="a lab's own images (data.folder: ImageFolder layout or train/test.npz)",
    ),
)

for _decl in BUILTINS:
    register_dataset(_decl)
