"""The software versions recorded with every run (fedgen, torch, numpy, python, code, plugins).

Imports neither torch nor numpy: a package that this process has already imported
reports its own `__version__` (with the build's local label, e.g. `2.14.1+cu130`);
otherwise the installed distribution's version is read from its metadata, so the
API can record versions at submission without loading torch.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import fedgen
from fedgen.plugins import version_entries
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


# Every package this project ships (pyproject's packages.find include, which a test keeps
# equal): their sources make the code version of an installed copy.
PACKAGES = (
    "fedgen",
    "vocab",
    "lab",
    "api",
    "worker",
    "dashboard",
    "migrations",
    "fedgen_lab",
    "admin",
)


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _sources_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Which code this process runs: "git:<commit>" (with "+dirty" when tracked files differ from
    it) where the code is a git checkout, else "src:<hash of the installed sources>".

    Two workers with the same value run the same code; a lab worker registers it and every run
    records it (in `versions` and in each of its segments).
    """
    root = Path(__file__).resolve().parent.parent
    if (root / ".git").exists():
        head = _git(root, "rev-parse", "HEAD")
        if head:
            changes = _git(root, "status", "--porcelain", "--untracked-files=no")
            return f"git:{head.strip()}" + ("+dirty" if changes is None or changes.strip() else "")
    return f"src:{_sources_hash(root)}"


def versions() -> dict[str, str]:
    """{"fedgen", "torch", "numpy", "python"} -> version; a package not installed is left out;
    "code" -> `code_version()` (the commit or source hash this process runs); "plugin:<name>"
    -> "<distribution> <version>" of each plugin loaded (`fedgen.plugins`), whose algorithms
    and datasets a run may use.

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
    out["code"] = code_version()
    out.update(version_entries())  # "plugin:<name>": "<distribution> <version>"
    threads = current_threads()
    if threads is not None:
        out["torch_threads"] = str(threads)
        out["cpu_capability"] = str(sys.modules["torch"].backends.cpu.get_cpu_capability())
    return out
