"""The legacy checkpoint file store under FEDGEN_HOME/checkpoints.

Checkpoints live in the database now (lab/repository/checkpoints.py); this store only serves
the files written before that, by path relative to its root, until `fedgen-lab checkpoints
import` moves them in. Nothing in the lab writes here any more (`put` makes such files in
tests of the legacy path).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

from fedgen.checkpoint import write_atomic


class CheckpointStore:
    """Content files addressed by a path relative to `root`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def put(self, run_id: str, round_: int, kind: str, sha256: str, data: bytes) -> str:
        """Write the bytes atomically and return the relative path to store in the DB."""
        rel = f"{run_id}/{round_:06d}-{kind}-{sha256[:16]}.pt"
        write_atomic(self.root / rel, data)
        return rel

    def path(self, rel: str) -> Path:
        """Absolute path of a stored file; refuses paths that leave the root."""
        p = (self.root / rel).resolve()
        if self.root.resolve() not in p.parents:
            raise ValueError(f"checkpoint path {rel!r} escapes the store")
        return p

    def read(self, rel: str) -> bytes:
        """The whole file (used to resume a run)."""
        return self.path(rel).read_bytes()

    def iter_chunks(self, rel: str, chunk: int = 1 << 20) -> Iterator[bytes]:
        """Stream a file in chunks (downloads)."""
        with self.path(rel).open("rb") as fh:
            while block := fh.read(chunk):
                yield block

    def delete_run(self, run_id: str) -> None:
        """Remove a run's whole folder, files written by a round still in flight included."""
        shutil.rmtree(self.root / run_id, ignore_errors=True)

    def delete(self, rels: list[str]) -> None:
        """Remove files (missing ones are ignored)."""
        for rel in rels:
            try:
                self.path(rel).unlink(missing_ok=True)
            except ValueError:
                continue
