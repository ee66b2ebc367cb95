"""The software versions recorded with every run (fedgen, torch, numpy, python).

Imports neither torch nor numpy: a package that this process has already imported
reports its own `__version__` (with the build's local label, e.g. `2.14.1+cu130`);
otherwise the installed distribution's version is read from its metadata, so the
API can record versions at submission without loading torch.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

import fedgen
from fedgen.threads import current_threads


def _version(package: str) -> str | None:
    module = sys.modules.get(package)
    loaded = getattr(module, "__version__", None)
    if isinstance(loaded, str):
        return loaded
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str]:
    """{"fedgen", "torch", "numpy", "python"} -> version; a package not installed is left out.

    A process that has loaded torch (a run) also records "torch_threads", the intra-op
    threads it runs with (`fedgen run --threads`, a lab worker slot's share of the cores), and
    "cpu_capability", the CPU kernels torch picked (DEFAULT, AVX2, AVX512): two CPU runs of one
    spec agree bit for bit when these and the versions agree; across kernels the last bits of
    float sums differ, so the curves differ round by round (the seed statistics agree within
    their spread).
    """
    out = {"fedgen": fedgen.__version__}
    for package in ("torch", "numpy"):
        found = _version(package)
        if found is not None:
            out[package] = found
    out["python"] = platform.python_version()
    threads = current_threads()
    if threads is not None:
        out["torch_threads"] = str(threads)
        out["cpu_capability"] = str(sys.modules["torch"].backends.cpu.get_cpu_capability())
    return out
