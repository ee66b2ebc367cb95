"""Checkpoints: serialise and load run state with `torch.load(weights_only=True)`-safe contents.

A 'full' checkpoint holds the global model, the algorithm's state (optimizers,
schedulers, generator, per-user state), every RNG state, the round index, the
spec hash, the partition fingerprint and the accuracy history, so a resumed run
continues exactly where it stopped. Writing to disk is atomic (temp file, then
`os.replace`).
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

FORMAT_VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read or does not belong to this run."""


def to_bytes(obj: dict[str, Any]) -> bytes:
    import torch  # here, so that importing this module (`fedgen validate`) does not load torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def from_bytes(data: bytes, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    import torch

    try:
        obj = torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt or unsafe files
        raise CheckpointError(f"cannot read checkpoint: {exc}") from exc
    if not isinstance(obj, dict):
        raise CheckpointError("checkpoint does not hold a mapping")
    return obj


def read(source: bytes | str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint from bytes or a file path."""
    if isinstance(source, bytes | bytearray):
        return from_bytes(bytes(source), map_location)
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc.strerror}") from exc
    return from_bytes(data, map_location)


def write_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
