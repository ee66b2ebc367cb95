"""Random tensors of a dataset's shape for the speed benches, where its files are absent.

`bench/round_speed.py` and `bench/gpu.py` take `--dataset NAME`; when NAME's files are not on
this host (or NAME is a CIFAR not registered here), `stand_in(NAME)` registers a dataset
`random-NAME` of the same shape and classes whose loader returns random Gaussian images with
balanced labels (a speed figure does not depend on the pixels), and returns its name. Known
shapes without a registration: cifar10 (3x32x32, 10 classes) and cifar100 (3x32x32, 100).
"""

from __future__ import annotations

from pathlib import Path

from fedgen.data.common import default_root
from fedgen.data.decl import DatasetDecl
from fedgen.data.registry import dataset_names, get_dataset, register_dataset

KNOWN: dict[str, tuple[tuple[int, int, int], int]] = {
    "cifar10": ((3, 32, 32), 10),
    "cifar100": ((3, 32, 32), 100),
}
TRAIN, TEST = 5000, 500


def _loader(name: str, shape: tuple[int, int, int], classes: int, train: int, test: int):  # type: ignore[no-untyped-def]
    def load(data, partition):  # type: ignore[no-untyped-def]  # noqa: ARG001
        import torch

        from fedgen.data.common import DatasetTensors

        gen = torch.Generator().manual_seed(0)

        def part(n: int) -> tuple[torch.Tensor, torch.Tensor]:
            y = torch.randperm(n, generator=gen) % classes
            return torch.randn(n, *shape, generator=gen), y

        tx, ty = part(train)
        vx, vy = part(test)
        return DatasetTensors(name, tx, ty, vx, vy, classes)

    return load


def stand_in(dataset: str, root: Path | None = None, train: int = TRAIN, test: int = TEST) -> str:
    """`dataset` when its files are here; else the name of a registered random stand-in."""
    if dataset in dataset_names():
        decl = get_dataset(dataset)
        if decl.missing(root or default_root()) is None:
            return dataset
        shape, classes = decl.shape, decl.classes
    elif dataset in KNOWN:
        shape, classes = KNOWN[dataset]
    else:
        raise SystemExit(f"unknown dataset {dataset!r}; registered: {', '.join(dataset_names())}")
    name = f"random-{dataset}"
    if name not in dataset_names():
        register_dataset(
            DatasetDecl(
                name,
                f"random {dataset}",
                shape,
                classes,
                _loader(name, shape, classes, train, test),
                description=f"random tensors shaped like {dataset} (bench stand-in)",
            )
        )
    print(f"data: {dataset} files not found: random {'x'.join(map(str, shape))} tensors instead")
    return name
