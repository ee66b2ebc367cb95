"""Which registered datasets a host has, found without reading their files (no torch, no
numpy).

A lab worker asks `loadable` at start which datasets it can run (worker.capabilities), so the
dispatcher never sends it a run whose files it lacks. Which datasets there are, and how each
tells whether a host has it, is their declaration's (fedgen.data.registry: `available`); where
the built-ins' files are: `fedgen.data.files`.
"""

from __future__ import annotations

from pathlib import Path

from fedgen.data.registry import datasets, get_dataset


def present(name: str, root: Path) -> bool:
    """True when `name`'s files are where the loader looks (`synthetic` needs none; `folder`
    is always offered: each spec names its own files)."""
    return get_dataset(name).missing(root) is None


def loadable(root: Path) -> list[str]:
    """The registered datasets whose files are present under data root `root` (or Debian's
    folder), plugins' included."""
    return [d.name for d in datasets() if d.missing(root) is None]
