"""CIFAR-10 and CIFAR-100 from torchvision's on-disk layout, and their train-time augmentation.

Layouts (what ``torchvision.datasets.CIFAR10/CIFAR100(root, download=True)`` writes):

* ``cifar10``  ``<root>/cifar-10-batches-py/{data_batch_1..5, test_batch}``
* ``cifar100`` ``<root>/cifar-100-python/{train, test}``

Each file is a pickle (protocol 2, written by Python 2: read with ``encoding="bytes"``) of a
dict holding ``b"data"``, an (N, 3072) uint8 array (1024 red, 1024 green, 1024 blue values of
a 32x32 image, row-major) and the labels: ``b"labels"`` (CIFAR-10) or ``b"fine_labels"``
(CIFAR-100's 100 classes). Images are scaled to [0, 1] and normalised per channel with the
training set's mean and standard deviation (`NORMALISE`), as the literature does.

`data.augment: crop-flip` (the CIFAR default) is the standard train-time augmentation of
the ResNet papers (He et al. 2016) and the federated CIFAR work that follows them: a random
32x32 crop of the image padded by 4 pixels of zeros, and a horizontal flip with probability
1/2, drawn anew every time a sample is in a batch (`augment_batch`). Test images are never
augmented. `none` trains on the images as stored.

The torch-free parts (where the files are, the check `fedgen validate` runs) are importable
without torch; the loader imports numpy and torch when called.
"""

from __future__ import annotations

import functools
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedgen.data.common import DataFiles, DatasetError, DatasetTensors, base_root, file_record

if TYPE_CHECKING:
    import torch

SIDE = 32
PIXELS = 3 * SIDE * SIDE


@dataclass(frozen=True)
class CifarInfo:
    folder: str  # sub-folder of the data root
    train: tuple[str, ...]  # training files, in the order their samples are concatenated
    test: str
    label_key: bytes
    num_classes: int
    samples: tuple[int, int]  # train, test of the real files (the declaration's counts)
    mean: tuple[float, float, float]
    std: tuple[float, float, float]


#: The two datasets. Mean and std: per channel over the training set's pixels in [0, 1].
CIFAR: dict[str, CifarInfo] = {
    "cifar10": CifarInfo(
        "cifar-10-batches-py",
        tuple(f"data_batch_{i}" for i in range(1, 6)),
        "test_batch",
        b"labels",
        10,
        (50_000, 10_000),
        (0.4914, 0.4822, 0.4465),
        (0.2470, 0.2435, 0.2616),
    ),
    "cifar100": CifarInfo(
        "cifar-100-python",
        ("train",),
        "test",
        b"fine_labels",
        100,
        (50_000, 10_000),
        (0.5071, 0.4865, 0.4409),
        (0.2673, 0.2564, 0.2762),
    ),
}


def cifar_folder(name: str, root: Path) -> Path:
    return root / CIFAR[name].folder


def cifar_files(name: str, root: Path) -> list[Path]:
    info = CIFAR[name]
    folder = cifar_folder(name, root)
    return [folder / f for f in (*info.train, info.test)]


def cifar_probe(name: str) -> Any:
    """`DatasetDecl.available`: are the files there (not read)."""

    def probe(root: Path) -> bool | str:
        missing = [f.name for f in cifar_files(name, root) if not f.is_file()]
        if not missing:
            return True
        return f"{name}: {', '.join(missing)} missing in {cifar_folder(name, root)}"

    return probe


def _where(data: DataFiles) -> str:
    return (
        f"data.root {data.root!r}" if data.root else "the data root (FEDGEN_DATA or ~/.fedgen/data)"
    )


def _missing_error(name: str, data: DataFiles, root: Path, missing: list[str]) -> DatasetError:
    info = CIFAR[name]
    return DatasetError(
        f"{name}: {', '.join(missing)} not found in {root / info.folder} under {_where(data)}. "
        f"Expected torchvision's layout <root>/{info.folder}/{{{', '.join((*info.train, info.test))}}}: "
        "copy the extracted archive there, or set data.download: true on a machine with "
        "internet."
    )


def cifar_check(name: str) -> Any:
    """`DatasetDecl.check`: under a spec's data.root, the files missing (unless
    `data.download` fetches them) and the files that are not a CIFAR pickle of the layout above
    (read with `SafeUnpickler`; a file's verdict is cached while its size and mtime hold).
    What `POST /runs` refuses with a 422 on `data.root`, and `POST /spec/validate` warns of."""

    def check(data: DataFiles) -> list[tuple[str, str]]:
        if not data.root:  # the worker's own data root: the workers' offers say who has it
            return []
        root = base_root(data)
        info = CIFAR[name]
        paths = cifar_files(name, root)
        missing = [f.name for f in paths if not f.is_file()]
        if missing and not data.download:
            return [("data.root", str(_missing_error(name, data, root, missing)))]
        problems = []
        for path in paths:
            if path.name in missing:
                continue
            stat = path.stat()
            why = _file_problem(
                path.resolve(), stat.st_size, stat.st_mtime_ns, info.label_key, info.num_classes
            )
            if why is not None:
                problems.append(("data.root", why.replace("{where}", _where(data))))
        return problems

    return check


@functools.lru_cache(maxsize=64)
def _file_problem(
    path: Path,
    size: int,  # noqa: ARG001 (with mtime: a changed file is read again)
    mtime_ns: int,  # noqa: ARG001
    label_key: bytes,
    classes: int,
) -> str | None:
    """Why the file is not a CIFAR batch ("{where}" left to fill in), or None."""
    try:
        _, labels = read_batch(path, label_key, "{where}", safe=True)
    except DatasetError as exc:
        return str(exc)
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        return f"malformed CIFAR file {path} (under {{where}}): labels outside [0, {classes})"
    return None


class SafeUnpickler(pickle.Unpickler):
    """Unpickles what a CIFAR file holds (dicts, lists, bytes, numbers, NumPy arrays) and
    refuses any other global: a file under a data root is read on the API's host before any
    worker touches it, and a pickle can otherwise run any code it names."""

    ALLOWED = frozenset(
        {
            ("numpy.core.multiarray", "_reconstruct"),  # NumPy 1 (the archives)
            ("numpy._core.multiarray", "_reconstruct"),  # NumPy 2
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            ("_codecs", "encode"),  # Python 3 bytes under protocol 2
        }
    )

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in a CIFAR file")
        return super().find_class(module, name)


def read_batch(path: Path, label_key: bytes, where: str, *, safe: bool = False) -> tuple[Any, Any]:
    """One pickle's images (N, 3, 32, 32) uint8 and labels (N,) int64; `safe`: with
    `SafeUnpickler` (the API's check; the worker's loader reads as torchvision does).

    Raises
    ------
    DatasetError
        The file cannot be unpickled or does not hold the layout above; names `where`.
    """
    import numpy as np

    try:
        with path.open("rb") as fh:
            if safe:
                entry = SafeUnpickler(fh, encoding="bytes").load()
            else:
                entry = pickle.load(fh, encoding="bytes")
    except (
        OSError,
        EOFError,
        pickle.UnpicklingError,
        ValueError,
        TypeError,
        AttributeError,
        ImportError,
        IndexError,
        KeyError,
    ) as exc:
        raise DatasetError(
            f"malformed CIFAR file {path} (under {where}): {type(exc).__name__}: {exc}; "
            "delete it and fetch it again"
        ) from None
    if not isinstance(entry, dict) or b"data" not in entry or label_key not in entry:
        keys = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
        raise DatasetError(
            f"malformed CIFAR file {path} (under {where}): expected a dict with b'data' and "
            f"{label_key!r}, got {keys}"
        )
    try:
        images = np.asarray(entry[b"data"])
        labels = np.asarray(entry[label_key], dtype=np.int64)
    except (ValueError, TypeError, OverflowError) as exc:
        raise DatasetError(
            f"malformed CIFAR file {path} (under {where}): {type(exc).__name__}: {exc}"
        ) from None
    if images.dtype != np.uint8 or images.ndim != 2 or images.shape[1] != PIXELS:
        raise DatasetError(
            f"malformed CIFAR file {path} (under {where}): data is {images.dtype} "
            f"{images.shape}, expected uint8 (N, {PIXELS})"
        )
    if labels.shape != (images.shape[0],):
        raise DatasetError(
            f"malformed CIFAR file {path} (under {where}): labels of shape {labels.shape} "
            f"for {images.shape[0]} images"
        )
    return images.reshape(-1, 3, SIDE, SIDE), labels


def _normalised(images: Any, info: CifarInfo) -> torch.Tensor:
    import torch

    x = torch.from_numpy(images).float().div_(255.0)
    mean = torch.tensor(info.mean).view(1, 3, 1, 1)
    std = torch.tensor(info.std).view(1, 3, 1, 1)
    return x.sub_(mean).div_(std)


@functools.lru_cache(maxsize=2)
def _load_cached(name: str, root: Path, where: str) -> DatasetTensors:
    import numpy as np
    import torch

    info = CIFAR[name]
    paths = cifar_files(name, root)
    files = tuple(file_record(root, p) for p in paths)
    parts = [read_batch(p, info.label_key, where) for p in paths]
    train_x = np.concatenate([x for x, _ in parts[:-1]])
    train_y = np.concatenate([y for _, y in parts[:-1]])
    test_x, test_y = parts[-1]
    for path, (_, y) in zip(paths, parts, strict=True):
        if y.size and (y.min() < 0 or y.max() >= info.num_classes):
            raise DatasetError(
                f"malformed CIFAR file {path} (under {where}): labels outside "
                f"[0, {info.num_classes})"
            )
    return DatasetTensors(
        name,
        _normalised(train_x, info),
        torch.from_numpy(train_y),
        _normalised(test_x, info),
        torch.from_numpy(test_y.copy()),
        info.num_classes,
        files=files,
    )


def _download(name: str, root: Path) -> None:
    import torchvision.datasets as tvd

    cls = tvd.CIFAR10 if name == "cifar10" else tvd.CIFAR100
    try:
        cls(str(root), train=True, download=True)
    except Exception as exc:  # network or checksum errors
        raise DatasetError(f"{name}: download into {root} failed: {exc}") from None


def load_cifar(data: DataFiles, partition: object) -> DatasetTensors:  # noqa: ARG001
    """The registry's loader of cifar10 and cifar100."""
    name = data.name
    root = base_root(data)
    missing = [f.name for f in cifar_files(name, root) if not f.is_file()]
    if missing and data.download:
        _download(name, root)
        missing = [f.name for f in cifar_files(name, root) if not f.is_file()]
    if missing:
        raise _missing_error(name, data, root, missing)
    return _load_cached(name, root.resolve(), _where(data))


def augment_batch(x: torch.Tensor, generator: torch.Generator, pad: int = 4) -> torch.Tensor:
    """Crop-flip of a batch (N, C, H, W): each image padded by `pad` zeros, cropped back to
    H x W at a random offset and flipped horizontally with probability 1/2 (`generator`'s
    draws, on the CPU: the same on every device)."""
    import torch

    n, _, h, w = x.shape
    if n == 0:
        return x
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=generator).to(x.device)
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=generator).to(x.device)
    flip = (torch.rand(n, generator=generator) < 0.5).to(x.device)
    rows = (dy.view(n, 1) + torch.arange(h, device=x.device).view(1, h)).view(n, 1, h, 1)
    cols = dx.view(n, 1) + torch.arange(w, device=x.device).view(1, w)
    cols = torch.where(flip.view(n, 1), cols.flip(1), cols).view(n, 1, 1, w)
    batch = torch.arange(n, device=x.device).view(n, 1, 1, 1)
    chan = torch.arange(x.shape[1], device=x.device).view(1, -1, 1, 1)
    return padded[batch, chan, rows, cols]
