"""The `folder` dataset: a lab's own images, described by the spec's `data.folder`.

Two layouts, told apart by what `data.folder.path` holds (train.npz wins if both are there):

* ImageFolder (torchvision's): ``train/<class>/*.png`` and ``test/<class>/*.png`` (also jpg,
  jpeg, bmp, gif, webp, tif, tiff). A class is a sub-folder; label i is the i-th class folder
  in sorted order, or the i-th of `classes` when names are given (the folders must then be
  exactly those names). Every image is converted to `channels` (1 grey, 3 RGB; 2 and 4 add
  alpha) and resized to `image_size` x `image_size` (bilinear).
* npz: ``train.npz`` and ``test.npz``, each with ``x`` of shape (N, H, W) or (N, C, H, W) and
  ``y`` of shape (N,), integer labels in 0..classes-1. H = W = `image_size` and C = `channels`
  exactly (no resizing: the arrays are taken as they are). uint8 images are scaled to [-1, 1]
  like MNIST (ToTensor, Normalize(0.5, 0.5)); float images are used as they are.

The test split is the one on disk (no seeded split): what a lab evaluates on stays fixed
whatever the seeds. A relative path is under the data root of the host that loads it (data.root,
else $FEDGEN_DATA, else ~/.fedgen/data), so every host of a lab can keep its own copy.

`check_folder` finds what is wrong (missing folder, wrong shape, wrong class count) without
torch and without reading the images: `fedgen validate` reports it as spec errors naming
`data.folder`; a worker's load raises the same messages as a DatasetError.
"""

from __future__ import annotations

import functools
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from fedgen.data.common import (
    DataFile,
    DataFiles,
    DatasetError,
    DatasetTensors,
    base_root,
    file_record,
    tree_record,
)
from fedgen.data.decl import DatasetDecl, Shape
from fedgen.data.folder_spec import FolderSpec

if TYPE_CHECKING:  # numpy and torch are imported where files are read: the checks' callers
    # (the dataset registry, so `fedgen validate`) load neither
    import numpy as np
    import torch

FIELD = "data.folder"
SPLITS = ("train", "test")
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
PIL_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
Layout = Literal["npz", "imagefolder"]
Problems = list[tuple[str, str]]


class FolderData(DataFiles, Protocol):
    """What this module reads of a spec's `data` section (`fedgen.data_spec.DataSpec`, which
    validates names against the dataset registry, which declares `folder` from here)."""

    @property
    def folder(self) -> FolderSpec | None: ...


def _folder(data: FolderData) -> FolderSpec:
    if data.folder is None:  # DataSpec's own validator requires it for name 'folder'
        raise DatasetError(f"{FIELD}: required when data.name is 'folder'")
    return data.folder


def folder_path(folder: FolderSpec, root: Path) -> Path:
    """Where the files are: `folder.path` if absolute, else under the data root `root`."""
    p = Path(folder.path).expanduser()
    return p if p.is_absolute() else root / p


def folder_shape(data: FolderData) -> Shape:
    f = _folder(data)
    return (f.channels, f.image_size, f.image_size)


def folder_classes(data: FolderData) -> int:
    return _folder(data).num_classes


def layout_of(path: Path) -> Layout | None:
    """'npz' when train.npz is there, 'imagefolder' when train/ is, else None."""
    if (path / "train.npz").is_file():
        return "npz"
    if (path / "train").is_dir():
        return "imagefolder"
    return None


# --------------------------------------------------------------------------- checks


def _npz_header(file: Path, key: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """Shape and dtype of array `key` in an .npz, read from its header alone."""
    import numpy as np

    with zipfile.ZipFile(file) as zf, zf.open(f"{key}.npy") as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    return tuple(int(d) for d in shape), dtype


def _check_npz(f: FolderSpec, path: Path) -> Problems:
    import numpy as np

    side, c = f.image_size, f.channels
    expected = f"expected (N, H, W) or (N, C, H, W) with H, W = {side}" + (
        "" if c == 1 else f" and C = {c} (data.folder.channels)"
    )
    for split in SPLITS:
        file = path / f"{split}.npz"
        if not file.is_file():
            return [(FIELD, f"{file} is missing (an npz dataset needs train.npz and test.npz)")]
        try:
            headers = {k: _npz_header(file, k) for k in ("x", "y")}
        except KeyError as exc:
            return [(FIELD, f"{file} has no array {str(exc).split()[-1]} (needs x and y)")]
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            return [(FIELD, f"cannot read {file}: {exc}")]
        (xs, xt), (ys, yt) = headers["x"], headers["y"]
        ok_dims = len(xs) == 3 and c == 1 or len(xs) == 4 and xs[1] == c
        if not ok_dims or xs[-2:] != (side, side):
            return [(FIELD, f"{split}.npz: x has shape {xs}; {expected}")]
        if xt.kind not in "uf":
            return [(FIELD, f"{split}.npz: x has dtype {xt}; expected uint8 or float")]
        if ys != (xs[0],):
            return [(FIELD, f"{split}.npz: y has shape {ys}; expected ({xs[0]},), one per x")]
        if yt.kind not in "iu":
            return [(FIELD, f"{split}.npz: y has dtype {yt}; expected integer labels")]
        with np.load(file) as arrays:  # labels are small: read them for the class check
            y = arrays["y"]
        if y.size and (int(y.min()) < 0 or int(y.max()) >= f.num_classes):
            return [
                (
                    f"{FIELD}.classes",
                    f"{split}.npz: labels span {int(y.min())}..{int(y.max())}, outside "
                    f"0..{f.num_classes - 1} for {f.num_classes} classes",
                )
            ]
    return []


def _class_dirs(split: Path) -> list[str]:
    return sorted(p.name for p in split.iterdir() if p.is_dir() and not p.name.startswith("."))


def _images(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file()
    )


def class_names(f: FolderSpec, path: Path) -> list[str]:
    """The ImageFolder class folders in label order."""
    return list(f.classes) if isinstance(f.classes, list) else _class_dirs(path / "train")


def _check_imagefolder(f: FolderSpec, path: Path) -> Problems:
    for split in SPLITS:
        where = path / split
        if not where.is_dir():
            return [(FIELD, f"{where} is missing (an ImageFolder dataset needs train/ and test/)")]
        found = _class_dirs(where)
        if isinstance(f.classes, list):
            if found != sorted(f.classes):
                return [
                    (
                        f"{FIELD}.classes",
                        f"{where} has class folders {found}; expected {sorted(f.classes)}",
                    )
                ]
        elif len(found) != f.classes:
            return [
                (
                    f"{FIELD}.classes",
                    f"{where} has {len(found)} class folders ({', '.join(found[:10])}); "
                    f"expected {f.classes}",
                )
            ]
        empty = [name for name in found if split == "train" and not _images(where / name)]
        if empty:
            return [(FIELD, f"{where}: no images in class folders {empty[:10]}")]
    return []


def check_files(f: FolderSpec, root: Path) -> Problems:
    """What is wrong with the files `f` points to under data root `root` (empty: fine)."""
    path = folder_path(f, root)
    if not path.is_dir():
        given = "" if Path(f.path) == path else f" (data.folder.path {f.path!r})"
        return [(f"{FIELD}.path", f"folder {path} does not exist{given}")]
    kind = layout_of(path)
    if kind == "npz":
        return _check_npz(f, path)
    if kind == "imagefolder":
        return _check_imagefolder(f, path)
    return [
        (
            f"{FIELD}.path",
            f"{path} holds neither train.npz (and test.npz) nor train/<class>/ image folders",
        )
    ]


def check_folder(data: FolderData) -> Problems:
    """`check_files` for the spec's folder on this host (the registry's `check`)."""
    return check_files(_folder(data), base_root(data))


# --------------------------------------------------------------------------- loading


def _scaled(x: np.ndarray[Any, Any]) -> torch.Tensor:
    import numpy as np
    import torch

    if x.dtype == np.uint8:  # ToTensor then Normalize(0.5, 0.5), as for MNIST
        return torch.from_numpy(x.astype(np.float32)).div_(255.0).sub_(0.5).div_(0.5)
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))


def _load_npz(path: Path, split: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    import numpy as np

    with np.load(path / f"{split}.npz") as arrays:
        x, y = arrays["x"], arrays["y"]
    if x.ndim == 3:
        x = x[:, None]
    return x, y.astype(np.int64)


def _load_images(
    f: FolderSpec, path: Path, split: str
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    import numpy as np
    from PIL import Image

    side, mode = f.image_size, PIL_MODES[f.channels]
    xs: list[np.ndarray[Any, Any]] = []
    ys: list[int] = []
    for label, name in enumerate(class_names(f, path)):
        for file in _images(path / split / name):
            try:
                with Image.open(file) as im:
                    img = im.convert(mode)
                    if img.size != (side, side):
                        img = img.resize((side, side), Image.Resampling.BILINEAR)
                    arr = np.asarray(img, dtype=np.uint8)
            except OSError as exc:
                raise DatasetError(f"{FIELD}: cannot read image {file}: {exc}") from None
            xs.append(arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1))
            ys.append(label)
    if not xs:
        raise DatasetError(f"{FIELD}: no images under {path / split}")
    return np.stack(xs), np.asarray(ys, dtype=np.int64)


def _records(f: FolderSpec, path: Path, root: Path) -> tuple[DataFile, ...]:
    """What a load of `path` reads: train.npz and test.npz, or each split's images (one entry
    per split folder); relative to the data root when under it, else to `path`'s parent."""
    home = root if path.is_relative_to(root) else path.parent
    if layout_of(path) == "npz":
        return tuple(file_record(home, path / f"{split}.npz") for split in SPLITS)
    return tuple(
        tree_record(
            home,
            path / split,
            [img for name in class_names(f, path) for img in _images(path / split / name)],
        )
        for split in SPLITS
    )


@functools.lru_cache(maxsize=4)
def _load_cached(name: str, key: str, path: Path, root: Path, mtime: float) -> DatasetTensors:  # noqa: ARG001 (a cache key)
    import torch

    f = FolderSpec.model_validate_json(key)  # hashable form: class names are a list
    kind = layout_of(path)
    tensors: list[torch.Tensor] = []
    for split in SPLITS:
        x, y = _load_npz(path, split) if kind == "npz" else _load_images(f, path, split)
        tensors += [_scaled(x), torch.from_numpy(y)]
    files = _records(f, path, root)
    return DatasetTensors(
        name, tensors[0], tensors[1], tensors[2], tensors[3], f.num_classes, files=files
    )


def load_folder(f: FolderSpec, root: Path, name: str = "folder") -> DatasetTensors:
    """Load the dataset `f` describes (under data root `root`) as dataset `name`.

    Raises
    ------
    DatasetError
        Naming `data.folder` and what is wrong (`check_files`'s messages).
    """
    problems = check_files(f, root)
    if problems:
        raise DatasetError("; ".join(f"{field}: {msg}" for field, msg in problems))
    path = folder_path(f, root).resolve()
    # Files changed on disk are read again (the cache key includes the train data's mtime).
    train = path / "train.npz" if layout_of(path) == "npz" else path / "train"
    return _load_cached(name, f.model_dump_json(), path, root.resolve(), train.stat().st_mtime)


def load_folder_dataset(data: FolderData, partition: object) -> DatasetTensors:  # noqa: ARG001
    """The registry's loader of `folder`: the spec's `data.folder`."""
    return load_folder(_folder(data), base_root(data))


# --------------------------------------------------------------------------- for plugins


def folder_dataset(
    name: str,
    label: str,
    folder: FolderSpec,
    *,
    prepare: Callable[[Path], None] | None = None,
    description: str = "",
) -> DatasetDecl:
    """A dataset declaration whose files are a fixed `folder` layout (a plugin's dataset).

    `folder.path` is relative to the data root (or absolute), as in a spec. `prepare(path)`,
    when given, writes the files there if they are missing (a generated dataset), before
    the first load; without it, `available` reports the folder's problem.
    """

    def path_for(root: Path) -> Path:
        return folder_path(folder, root)

    def available(root: Path) -> bool | str:
        if prepare is not None:
            return True
        problems = check_files(folder, root)
        return True if not problems else f"{name}: {problems[0][1]}"

    def load(data: FolderData, partition: object) -> DatasetTensors:  # noqa: ARG001
        root = base_root(data)
        if prepare is not None and check_files(folder, root):
            prepare(path_for(root))
        return load_folder(folder, root, name)

    def check(data: FolderData) -> Problems:
        if prepare is not None:
            return []
        return [("data.name", f"{name}: {msg}") for _, msg in check_files(folder, base_root(data))]

    return DatasetDecl(
        name,
        label,
        (folder.channels, folder.image_size, folder.image_size),
        folder.num_classes,
        load,
        available=available,
        check=check,
        description=description or f"images in {folder.path} (folder layout)",
    )
