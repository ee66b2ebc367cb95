"""CelebA as in the official code (reference §2.3): users are groups of celebrities.

torchvision's layout ``<root>/celeba/{img_align_celeba/*.jpg, list_attr_celeba.txt,
identity_CelebA.txt}``. The binary label is 'Smiling'. Celebrities with at least
five images are shuffled with ``data_seed``; ``num_users x celebs_per_user`` of them
are taken and consecutive groups form a user. Each celebrity's images are split
90/10 into train and test, so a user's test images are of its own celebrities.
Images are resized to 84x84 RGB and kept as raw 0-255 floats, as the official code does.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
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
    tree_record,
)
from fedgen.data_spec import DataSpec
from fedgen.spec import PartitionSpec

CELEBA_IMAGE_SIZE = 84
CELEBA_MIN_IMAGES = 5
CELEBA_TRAIN_FRACTION = 0.9


def _celeba_error(folder: Path, problem: str) -> DatasetError:
    return DatasetError(
        f"celeba: {problem} in {folder}. Expected torchvision's CelebA layout: "
        f"{folder}/img_align_celeba/*.jpg, {folder}/list_attr_celeba.txt, "
        f"{folder}/identity_CelebA.txt (and list_eval_partition.txt). To get them: set "
        "data.download: true on a machine with internet (torchvision; needs gdown), or download "
        "'Align&Cropped Images' and the annotation files from the CelebA website into that "
        "folder (root = data.root, $FEDGEN_DATA or ~/.fedgen/data)."
    )


def _read_lines(path: Path, folder: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise _celeba_error(folder, f"cannot read {path.name} ({exc})") from None


def _celeba_annotations(folder: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Return (file -> identity, file -> smiling 0/1)."""
    identity: dict[str, int] = {}
    for line in _read_lines(folder / "identity_CelebA.txt", folder):
        parts = line.split()
        if parts:
            if len(parts) != 2 or not parts[1].lstrip("-").isdigit():
                raise _celeba_error(folder, f"malformed line {line!r} of identity_CelebA.txt")
            identity[parts[0]] = int(parts[1])
    lines = _read_lines(folder / "list_attr_celeba.txt", folder)
    if len(lines) < 2 or "Smiling" not in lines[1].split():
        raise _celeba_error(folder, "list_attr_celeba.txt without a header naming 'Smiling'")
    header = lines[1].split()
    col = header.index("Smiling") + 1
    smiling: dict[str, int] = {}
    for line in lines[2:]:
        parts = line.split()
        if parts:
            if len(parts) != len(header) + 1 or parts[col] not in ("1", "-1"):
                raise _celeba_error(folder, f"malformed line {line[:60]!r} of list_attr_celeba.txt")
            smiling[parts[0]] = 1 if parts[col] == "1" else 0
    return identity, smiling


def _read_image(path: Path) -> np.ndarray[Any, np.dtype[np.uint8]]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            arr = np.asarray(im.resize((CELEBA_IMAGE_SIZE, CELEBA_IMAGE_SIZE)).convert("RGB"))
    except (OSError, UnidentifiedImageError) as exc:
        raise _celeba_error(path.parent.parent, f"cannot read image {path.name} ({exc})") from None
    return arr


@functools.lru_cache(maxsize=2)
def _load_celeba_cached(folder: Path, num_users: int, per_user: int, seed: int) -> DatasetTensors:
    identity, smiling = _celeba_annotations(folder)
    by_celeb: dict[int, list[str]] = {}
    for fname, celeb in identity.items():
        if fname in smiling:
            by_celeb.setdefault(celeb, []).append(fname)
    eligible = sorted(c for c, files in by_celeb.items() if len(files) >= CELEBA_MIN_IMAGES)
    needed = num_users * per_user
    if len(eligible) < needed:
        raise DatasetError(
            f"celeba: {folder} has {len(eligible)} celebrities with >= {CELEBA_MIN_IMAGES} images, "
            f"but partition.num_users={num_users} x celebs_per_user={per_user} needs {needed}"
        )
    rng = np.random.default_rng(seed)
    chosen = [eligible[i] for i in rng.permutation(len(eligible))[:needed]]
    splits: tuple[list[tuple[str, int]], list[tuple[str, int]]] = ([], [])
    for pos, celeb in enumerate(chosen):
        files = sorted(by_celeb[celeb])
        files = [files[i] for i in rng.permutation(len(files))]
        n_train = int(CELEBA_TRAIN_FRACTION * len(files))
        splits[0].extend((f, pos // per_user) for f in files[:n_train])
        splits[1].extend((f, pos // per_user) for f in files[n_train:])
    img_dir = folder / "img_align_celeba"
    out: list[Any] = []
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for split in splits:
            images = list(pool.map(_read_image, [img_dir / f for f, _ in split]))
            x = np.stack(images).transpose(0, 3, 1, 2).astype(np.float32)
            y = np.array([smiling[f] for f, _ in split], dtype=np.int64)
            out += [
                torch.from_numpy(x),
                torch.from_numpy(y),
                np.array([g for _, g in split], dtype=np.int64),
            ]
    # What was read: the two annotation files and the chosen celebrities' images (one entry).
    root = folder.parent
    read = (
        file_record(root, folder / "identity_CelebA.txt"),
        file_record(root, folder / "list_attr_celeba.txt"),
        tree_record(root, img_dir, [img_dir / f for split in splits for f, _ in split]),
    )
    return DatasetTensors("celeba", out[0], out[1], out[3], out[4], 2, out[2], out[5], read)


def load_celeba(data: DataSpec, p: PartitionSpec) -> DatasetTensors:
    root = base_root(data)
    folder = root / "celeba"
    required = [folder / "identity_CelebA.txt", folder / "list_attr_celeba.txt"]
    ok = all(f.is_file() for f in required) and (folder / "img_align_celeba").is_dir()
    if not ok and data.download:
        torchvision_download("celeba", root)
        ok = all(f.is_file() for f in required) and (folder / "img_align_celeba").is_dir()
    if not ok:
        where = f" under data.root {data.root!r}" if data.root else ""
        raise _celeba_error(folder, f"dataset files not found{where}")
    return _load_celeba_cached(folder.resolve(), p.num_users, p.celebs_per_user, p.data_seed)
