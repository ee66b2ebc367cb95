"""Where a lab lets runs read data (FEDGEN_DATA_ROOTS), and the check of a spec's data paths.

A lab server is shared: a member's `data.root` or `data.folder.path` must not make the server
(`POST /spec/validate`) or a worker read, list or train on any other folder of its disks. The
lab lists its data roots in FEDGEN_DATA_ROOTS (comma-separated); empty, they are the default
data root (FEDGEN_DATA, else ~/.fedgen/data) and Debian's dataset folder /usr/share/datasets.

Paths are compared after `expanduser().resolve(strict=False)`, so `..`, `~` and symlinks
(also a symlink inside a root that points outside) cannot lead out. A member's refusal is one
message per field (`MEMBER_REFUSAL`), the same whatever the path is: it says neither the roots
(the default one is under the server's home) nor what the path resolves to, nor whether a
`~user` exists (`~nosuchuser` and `~root` read alike). An admin's (`detailed=True`) names the
path as given or as joined to the data root, why it is refused, and the roots.

Only the lab (API and worker) applies this; `fedgen run` on a researcher's own machine reads
what its spec names. Pure path logic: no FastAPI, no SQLAlchemy, no torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fedgen.data.common import default_root
from fedgen.data_spec import DataSpec

ENV = "FEDGEN_DATA_ROOTS"
# Said after the field's name ("spec.data.root: not inside ...").
MEMBER_REFUSAL = "not inside a data root the lab allows (FEDGEN_DATA_ROOTS)"
DEBIAN_DATASETS = Path("/usr/share/datasets")


def _resolved(path: str | Path) -> Path:
    """`path` with `~` expanded and `..` and symlinks resolved (it need not exist)."""
    return Path(path).expanduser().resolve(strict=False)


def allowed_roots(env: str | None = None) -> tuple[Path, ...]:
    """The data roots, resolved: the comma-separated `env` (None: $FEDGEN_DATA_ROOTS); empty,
    the default data root and Debian's /usr/share/datasets."""
    value = os.environ.get(ENV, "") if env is None else env
    entries: list[str | Path] = [e.strip() for e in value.split(",") if e.strip()]
    if not entries:
        entries = [default_root(), DEBIAN_DATASETS]
    return tuple(dict.fromkeys(_resolved(e) for e in entries))


def describe(roots: Sequence[Path]) -> str:
    """The roots as a refusal lists them."""
    return ", ".join(str(r) for r in roots) or "(none)"


def resolve_inside(path: str | Path, roots: Sequence[Path]) -> Path | str:
    """`path` resolved when it lies inside one of `roots` (or is one); else why not (a message
    that says nothing about what the path is outside the roots)."""
    where = f"the lab's data roots: {describe(roots)} (FEDGEN_DATA_ROOTS)"
    try:
        resolved = _resolved(path)
    except (OSError, RuntimeError, ValueError):  # unknown ~user, a symlink loop, a NUL byte
        return f"{str(path)!r} cannot be resolved to a folder inside {where}"
    if any(resolved == r or resolved.is_relative_to(r) for r in roots):
        return resolved
    return f"{str(path)!r} is outside {where}"


def _refusal(path: str | Path, roots: Sequence[Path], detailed: bool) -> str | None:
    """None when `path` resolves inside `roots`; else the member's one message, or with
    `detailed` (an admin) resolve_inside's."""
    inside = resolve_inside(path, roots)
    if not isinstance(inside, str):
        return None
    return inside if detailed else MEMBER_REFUSAL


def data_path_problems(
    data: DataSpec, roots: Sequence[Path], *, detailed: bool = False
) -> list[tuple[str, str]]:
    """(field, message) for each of `data.root` and `data.folder.path` that does not resolve
    inside `roots`; a relative folder path is taken under the data root, as the loader does.
    Empty: both are fine (or not given). The message is MEMBER_REFUSAL unless `detailed`."""
    problems: list[tuple[str, str]] = []
    root = default_root()
    if data.root:
        why = _refusal(data.root, roots, detailed)
        if why is not None:
            problems.append(("data.root", why))
        root = Path(data.root)
    if data.folder is not None:
        given = Path(data.folder.path)
        absolute = given.is_absolute() or data.folder.path.startswith("~")
        if absolute or not problems:  # relative under a refused root: said once
            # expanduser may fail (an unknown ~user): resolve_inside says so, as for any path.
            path = given if absolute else root / given
            why = _refusal(path, roots, detailed)
            if why is not None:
                problems.append(("data.folder.path", why))
    return problems
